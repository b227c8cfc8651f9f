package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
)

// repeatable marks the flag values that may be given more than once.
type repeatable interface{ repeatable() }

// setsFlag collects the repeated --set name=value, refusing a malformed
// one, as --group does, and a name given twice (the last would win
// silently); whether a name is a hyper is for where the settings apply.
type setsFlag []string

func (l *setsFlag) repeatable()    {}
func (l *setsFlag) String() string { return strings.Join(*l, ",") }
func (l *setsFlag) Set(s string) error {
	name, _, err := lang.ParseSetting(s)
	if err != nil {
		return err
	}
	for _, prev := range *l {
		if p, _, _ := lang.ParseSetting(prev); p == name { // " lr=2" is lr too
			return fmt.Errorf("%s is set twice (%s, then %s)", name, prev, s)
		}
	}
	*l = append(*l, s)
	return nil
}

// modeFlag is --noise-mode: a mode a run draws in (rng.ParseMode), philox
// by default.
type modeFlag rng.Mode

func (m *modeFlag) String() string { return rng.Mode(*m).String() }
func (m *modeFlag) Set(s string) error {
	x, err := rng.ParseMode(s)
	if err != nil {
		return errors.New("want philox or secure")
	}
	*m = modeFlag(x)
	return nil
}

// philoxMode is --noise-mode's default.
const philoxMode = modeFlag(rng.Philox)

// secure says whether the run draws secure noise (runtime.Options.SecureNoise).
func (m modeFlag) secure() bool { return rng.Mode(m) == rng.Secure }

// paramsFlag is --params: how the kernels store the parameters
// (ir.ParseStorage: "bf16", "bf16 stochastic"), float32 by default.
type paramsFlag ir.Storage

func (p *paramsFlag) String() string { return p.storage().String() }
func (p *paramsFlag) Set(s string) error {
	x, err := ir.ParseStorage(s)
	if err != nil {
		return fmt.Errorf(`want f32, bf16 or f16, then "stochastic" or nothing, e.g. --params 'bf16 stochastic'`)
	}
	*p = paramsFlag(x)
	return nil
}

// storage is the flag's storage, float32 when not given.
func (p paramsFlag) storage() ir.Storage { return ir.Storage(p).Defaulted() }

// compiler compiles a file for the parameters' storage (compileFile):
// with pipeline.CompileKernels where kernels must come of it (build).
func (p paramsFlag) compiler(kernels bool) func(string, io.Writer) *pipeline.Unit {
	compile := pipeline.CompileFor
	if kernels {
		compile = pipeline.CompileKernels
	}
	return func(path string, stderr io.Writer) *pipeline.Unit {
		return diagnose(path, stderr, func(path string, src []byte) (*pipeline.Unit, dsl.ErrorList, error) {
			return compile(path, src, p.storage())
		})
	}
}

// paramsUsage is --params' line in a command's usage.
const paramsUsage = "how the kernels store the parameters: f32 (default), bf16 or f16, then \"stochastic\" to round their stores stochastically, e.g. 'bf16 stochastic'"

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

// parseFlags parses the flags of fs, which may come before, between or
// after the positional arguments it returns, GNU style: --name value,
// --name=value, -name, a bool flag alone (--json) or --json=false. Each
// error is one line on stderr that names the flag as the usage spells it
// (flagError); -h and --help print the usage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, bool) {
	pos, err := scanFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, usage)
		return nil, false
	case err != nil:
		fmt.Fprintf(stderr, "fibergen %s: %v\n", fs.Name(), err)
		return nil, false
	}
	return pos, true
}

// scanFlags sets the flags of fs that args give (fs.Set, so that fs.Visit
// lists them) and returns the positional arguments, those after "--"
// included.
func scanFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(pos, args[i+1:]...), nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		switch {
		case name == "" || strings.HasPrefix(name, "-"):
			return nil, &flagError{arg: a, problem: "bad flag syntax"}
		case f == nil && (name == "h" || name == "help"):
			return nil, flag.ErrHelp
		case f == nil:
			return nil, &flagError{name: name, problem: "unknown flag"}
		case seen[name] && !isRepeatable(f):
			return nil, &flagError{name: name, problem: "given twice"}
		case !hasValue && isBool(f):
			value = "true"
		case !hasValue && i+1 == len(args):
			return nil, &flagError{name: name, problem: "needs a value"}
		case !hasValue:
			i++
			value = args[i]
		}
		seen[name] = true
		if err := fs.Set(name, value); err != nil {
			if isBool(f) {
				err = errors.New("want true or false")
			}
			return nil, &flagError{name: name, value: value, err: err}
		}
	}
	return pos, nil
}

// flagError is a flag that parseFlags refuses: unknown, given twice,
// without a value, or with a value its Set refuses (err). It is the one
// place that spells a flag in an error, as the usage does (flagName).
type flagError struct {
	name, value string
	arg         string // the argument itself, where it names no flag
	problem     string
	err         error
}

func (e *flagError) Error() string {
	switch {
	case e.arg != "":
		return fmt.Sprintf("%s %q: want --name or --name=value", e.problem, e.arg)
	case e.problem == "unknown flag":
		return fmt.Sprintf("unknown flag %s (fibergen help lists the flags of every command)", flagName(e.name))
	case e.err != nil:
		return fmt.Sprintf("%s %q: %v", flagName(e.name), e.value, e.err)
	}
	return fmt.Sprintf("%s %s", flagName(e.name), e.problem)
}

// shortFlags are the flags the usage spells with one dash (build -o DIR);
// every other is --name, --n included.
var shortFlags = map[string]bool{"o": true}

// flagName spells flag name as the usage does: -o, --sigma-w2.
func flagName(name string) string {
	if shortFlags[name] {
		return "-" + name
	}
	return "--" + name
}

// isBool says whether f is a bool flag, one that takes no value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isRepeatable says whether f may be given more than once.
func isRepeatable(f *flag.Flag) bool {
	_, ok := f.Value.(repeatable)
	return ok
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
