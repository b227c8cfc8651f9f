package ir

import (
	"flag"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
)

var update = flag.Bool("update", false, "rewrite golden files")

// program wraps declarations and a step body into a source named p.
func program(decls, body string) string {
	return "optimizer p\n" + decls + "\nstep {\n" + body + "\n}\n"
}

// lowerSource parses, checks and lowers src, failing the test on any
// diagnostic or lowering error.
func lowerSource(t *testing.T, src string) *Func {
	t.Helper()
	f, info, errs := dsl.Parse("test.dsl", []byte(src))
	if len(errs) > 0 {
		t.Fatalf("source does not check:\n%s\nerrors: %v", src, errs)
	}
	fn, err := Lower(f, info)
	if err != nil {
		t.Fatalf("Lower: %v\nsource:\n%s", err, src)
	}
	return fn
}

// lowerStep lowers a program made of decls and body.
func lowerStep(t *testing.T, decls, body string) *Func {
	t.Helper()
	return lowerSource(t, program(decls, body))
}

// sameDump compares two dumps, ignoring the surrounding blank space of the
// raw string literals the tests write them in.
func sameDump(got, want string) bool {
	return strings.TrimSpace(got) == strings.TrimSpace(want)
}
