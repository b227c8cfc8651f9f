// Package irtest helps the tests of the IR and its phases (ir, lower, noise,
// interp) start from DSL source, which reads better than IR built by hand.
package irtest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/lower"
)

// Program wraps declarations and a step body into a source named p.
func Program(decls, body string) string {
	return "optimizer p\n" + decls + "\nstep {\n" + body + "\n}\n"
}

// Func is an optimizer's IR with the noise analysis of its step as lowered.
type Func struct {
	*ir.Func
	Noise *noise.Analysis
}

// Lower parses, checks and lowers src, failing the test on any diagnostic
// or lowering error; the Func is not optimized. A constant that folds to
// ±Inf or NaN, which the checker refuses in a user's file, is let through:
// the IR's own handling of special values is what the IR's tests test.
func Lower(t testing.TB, src string) *ir.Func {
	t.Helper()
	f, info, errs := dsl.Parse("test.dsl", []byte(src))
	errs = slices.DeleteFunc(errs, func(e *dsl.Error) bool { return strings.HasSuffix(e.Msg, "constants must be finite (float64)") })
	if len(errs) > 0 {
		t.Fatalf("source does not check:\n%s\nerrors: %v", src, errs)
	}
	fn, _, err := lower.Lower(f, info)
	if err != nil {
		t.Fatalf("Lower: %v\nsource:\n%s", err, src)
	}
	return fn
}

// LowerStep lowers a program made of decls and body.
func LowerStep(t testing.TB, decls, body string) *ir.Func {
	t.Helper()
	return Lower(t, Program(decls, body))
}

// OptimizedStep lowers and optimizes a program made of decls and body and
// returns its step block.
func OptimizedStep(t testing.TB, decls, body string) *ir.Block {
	t.Helper()
	fn := LowerStep(t, decls, body)
	if err := ir.Optimize(fn); err != nil {
		t.Fatalf("Optimize: %v", err)
	}
	return fn.Step
}

// Build lowers and optimizes src, failing the test on any error.
func Build(t testing.TB, src string) (*ir.Func, *noise.Analysis) {
	t.Helper()
	fn, errs, err := Compile("test.dsl", []byte(src))
	if len(errs) > 0 || err != nil {
		t.Fatalf("Compile: %v %v\nsource:\n%s", errs, err, src)
	}
	return fn.Func, fn.Noise
}

// Compile parses, checks, lowers and optimizes src. Errors of the source
// come in errs (as dsl.Parse and lower.Build give them), a failure after
// checking in err: for the tests of what fibergen rejects.
func Compile(name string, src []byte) (fn *Func, errs dsl.ErrorList, err error) {
	f, info, errs := dsl.Parse(name, src)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	irf, an, err := lower.Build(f, info)
	if el := (dsl.ErrorList{}); errors.As(err, &el) {
		return nil, el, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &Func{irf, an}, nil, nil
}

// SameDump compares two dumps, ignoring the surrounding blank space of the
// raw string literals the tests write them in.
func SameDump(got, want string) bool {
	return strings.TrimSpace(got) == strings.TrimSpace(want)
}
