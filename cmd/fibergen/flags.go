package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// repeatable marks the flag values that may be given more than once.
type repeatable interface{ repeatable() }

// setsFlag collects the repeated --set name=value, refusing a name given
// twice (the last would win silently).
type setsFlag []string

func (l *setsFlag) repeatable()    {}
func (l *setsFlag) String() string { return strings.Join(*l, ",") }
func (l *setsFlag) Set(s string) error {
	name, _, _ := strings.Cut(s, "=")
	for _, prev := range *l {
		if p, _, _ := strings.Cut(prev, "="); p == name {
			return fmt.Errorf("%s is set twice (%s, then %s)", name, prev, s)
		}
	}
	*l = append(*l, s)
	return nil
}

// refuseRepeats reports a flag of fs given twice in args (the flag package
// lets the last win), unless its value is repeatable, before anything runs.
func refuseRepeats(fs *flag.FlagSet, args []string) error {
	seen := map[string]bool{}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "-") || f == nil {
			continue
		}
		if _, ok := f.Value.(repeatable); ok {
			continue
		}
		if seen[name] {
			return fmt.Errorf("flag -%s given twice", name)
		}
		seen[name] = true
	}
	return nil
}

// floatFlag is a float64 flag whose parse error says what it wants (the
// flag package's own says only "parse error").
type floatFlag float64

func (f *floatFlag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *floatFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("out of the float64 range")
	case err != nil:
		return errors.New("want a number")
	}
	*f = floatFlag(v)
	return nil
}

// uintFlag is a uint64 flag whose parse error says what it wants.
type uintFlag uint64

func (u *uintFlag) String() string { return strconv.FormatUint(uint64(*u), 10) }
func (u *uintFlag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return errors.New("want an integer from 0 to 2^64-1")
	}
	*u = uintFlag(v)
	return nil
}

// parseFlags parses flags that may appear before, between or after the
// positional arguments, which it returns. Errors are one line on stderr.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, bool) {
	fs.SetOutput(io.Discard)
	if err := refuseRepeats(fs, args); err != nil {
		fmt.Fprintf(stderr, "fibergen %s: %v\n", fs.Name(), err)
		return nil, false
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, usage)
			} else {
				fmt.Fprintf(stderr, "fibergen %s: %v\n", fs.Name(), err)
			}
			return nil, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, true
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), true
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// fail prints a one-line error for command cmd and returns exit status 1.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "fibergen %s: %v\n", cmd, err)
	return 1
}

// usageError prints a one-line usage error and returns exit status 2.
func usageError(stderr io.Writer, cmd, format string, args ...any) int {
	fmt.Fprintf(stderr, "fibergen %s: %s\n", cmd, fmt.Sprintf(format, args...))
	return 2
}
