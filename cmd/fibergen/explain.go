package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	goruntime "runtime"

	"github.com/fibergen/fibergen/explain"
	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	showIR := fs.Bool("ir", false, "include the IR dump")
	asJSON := fs.Bool("json", false, "print JSON")
	var sets setsFlag
	fs.Var(&sets, "set", "override a hyper: name=value (repeatable)")
	unstable := fs.Bool("allow-unstable", false, "allow hypers at which a state grows without bound")
	extrapolate := fs.Bool("allow-extrapolation", false, "allow a two_point weight a outside [0, 1], as run does")
	hostISA := fs.Bool("host-isa", false, "include the host kernel's instruction-set variants and which this CPU runs (cpu backend)")
	var steps, minSep uintFlag
	fs.Var(&steps, "steps", "a noise block's factorization over this many steps (default 1000)")
	fs.Var(&minSep, "min-sep", "a noise block's factorization with each example at most once every this many steps (default: --steps, one participation)")
	files, ok := parseFlags(fs, args, stderr)
	switch {
	case !ok:
		return 2
	case len(files) != 1:
		return usageError(stderr, "explain", "want exactly one .dsl file or shipped optimizer name, got %d", len(files))
	}
	u, errs, text := compileDiagnosed(files[0], pipeline.Check) // explain needs no code
	if u == nil {
		io.WriteString(stderr, text)
		if *asJSON {
			return jsonErrors(stdout, stderr, errs)
		}
		return 1
	}
	if *unstable {
		u.Func.DropBoundedFilters()
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	part, msg := participation(u, given, uint64(steps), uint64(minSep))
	if msg != "" {
		return usageError(stderr, "explain", "%s", msg)
	}
	// The settings as run checks them, at step 0, the step explain shows.
	warnings, err := checkSettings(u.Func, sets, 1, *extrapolate)
	if err != nil {
		return fail(stderr, "explain", err)
	}
	x, err := explain.Describe(u, sets, part)
	if err != nil {
		return fail(stderr, "explain", err)
	}
	warn(stderr, "explain", warnings)
	if *showIR {
		x.IR = u.Func.String()
	}
	if *hostISA {
		c, err := hostkernel.Choice()
		if err != nil {
			return fail(stderr, "explain", err)
		}
		x.HostISA = explain.DescribeHostISA(hostisa.For(goruntime.GOARCH), c)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(x); err != nil {
			return fail(stderr, "explain", err)
		}
		return 0
	}
	x.WriteText(stdout)
	return 0
}

// jsonErrors prints explain --json's answer for a file that does not
// compile, {"errors": ["file:line:col: message", ...]} (stderr has them in
// full, with source lines and carets), and returns exit status 1.
func jsonErrors(stdout, stderr io.Writer, errs []string) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string][]string{"errors": errs}); err != nil {
		return fail(stderr, "explain", err)
	}
	return 1
}

// maxExplainSteps bounds explain --steps: the sensitivity of a schema
// costs O(steps²/min-sep).
const maxExplainSteps = 100000

// participation is the schema of explain --steps and --min-sep, those
// given, or a message naming the flag that is wrong.
func participation(u *pipeline.Unit, given map[string]bool, steps, minSep uint64) (explain.Participation, string) {
	p := explain.DefaultParticipation
	if (given["steps"] || given["min-sep"]) && u.Func.Noise == nil {
		return p, fmt.Sprintf("--steps and --min-sep describe the participation of a noise block's factorization; %s has no noise block", u.Func.Name)
	}
	n, b := uint64(p.Steps), uint64(p.MinSep)
	if given["steps"] {
		n, b = steps, steps
	}
	if given["min-sep"] {
		b = minSep
	}
	if msg := checkParticipation(n, b, maxExplainSteps); msg != "" {
		return p, msg
	}
	return explain.Participation{Steps: int(n), MinSep: int(b)}, ""
}
