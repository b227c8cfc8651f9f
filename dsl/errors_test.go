package dsl_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
)

// An errorWant is what an ERROR comment asks of its line: a message that
// matches re and, if col > 0, that column.
type errorWant struct {
	col  int
	re   *regexp.Regexp
	text string // the comment, for messages
}

// errorComment matches `// ERROR "regex"` and `// ERROR col=N "regex"`. As in
// Go's own tests the regex is taken as written between the quotes, so it
// cannot hold a double quote (use . instead).
var errorComment = regexp.MustCompile(`// ERROR (?:col=(\d+) )?"([^"]*)"\s*$`)

// errorWants reads the ERROR comments of src, by line.
func errorWants(t *testing.T, src []byte) map[int]errorWant {
	t.Helper()
	wants := map[int]errorWant{}
	for i, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, "// ERROR") {
			continue
		}
		m := errorComment.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d: malformed ERROR comment: %s", i+1, line)
		}
		w := errorWant{re: regexp.MustCompile(m[2]), text: strings.TrimSpace(m[0])}
		if m[1] != "" {
			w.col, _ = strconv.Atoi(m[1])
		}
		wants[i+1] = w
	}
	return wants
}

// checkErrors parses and checks src and compares the errors with its ERROR
// comments: every comment is matched by the error on its line (message and,
// where given, column) and no line without a comment has an error.
func checkErrors(t *testing.T, filename string, src []byte) {
	t.Helper()
	_, _, errs := dsl.Parse(filename, src)
	wants := errorWants(t, src)
	if len(wants) == 0 {
		t.Fatalf("%s has no ERROR comment", filename)
	}
	if len(wants) >= dsl.MaxErrors {
		t.Fatalf("%s has %d ERROR comments; keep it under %d so that none is capped", filename, len(wants), dsl.MaxErrors)
	}
	seen := map[int]bool{}
	for _, e := range errs {
		checkPos(t, src, e)
		w, ok := wants[e.Pos.Line]
		switch {
		case !ok:
			t.Errorf("unexpected error %v", e)
		case !w.re.MatchString(e.Msg):
			t.Errorf("%v\n\tdoes not match %s", e, w.text)
		case w.col > 0 && e.Pos.Column != w.col:
			t.Errorf("%v\n\tat column %d, want %d (%s)", e, e.Pos.Column, w.col, w.text)
		}
		seen[e.Pos.Line] = true
	}
	for line, w := range wants {
		if !seen[line] {
			t.Errorf("%s:%d: no error, want %s", filename, line, w.text)
		}
	}
}

// checkPos reports an error whose position does not agree with src: the
// offset must lie in src and be at the position's line and column.
func checkPos(t *testing.T, src []byte, e *dsl.Error) {
	t.Helper()
	p := e.Pos
	if p.Offset < 0 || p.Offset > len(src) || p.Line < 1 || p.Column < 1 {
		t.Errorf("%v: position out of the file (offset %d, %d bytes)", e, p.Offset, len(src))
		return
	}
	before := src[:p.Offset]
	line := strings.Count(string(before), "\n") + 1
	col := p.Offset - (strings.LastIndexByte(string(before), '\n') + 1) + 1
	if line != p.Line || col != p.Column {
		t.Errorf("%v: offset %d is at %d:%d", e, p.Offset, line, col)
	}
}

func TestErrorFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/errors/*.dsl")
	if len(files) < 10 {
		t.Fatalf("found %d files in testdata/errors, want at least 10", len(files))
	}
	total := 0
	for _, path := range files {
		src := readFile(t, path)
		total += len(errorWants(t, src))
		t.Run(filepath.Base(path), func(t *testing.T) { checkErrors(t, path, src) })
	}
	if total < 40 {
		t.Errorf("testdata/errors has %d ERROR comments, want at least 40", total)
	}
}

// errorSources holds the cases that do not fit in a file with others:
// those about the whole file (only one optimizer name is checked) and those
// reported at the end of the file (written without a final newline, so that
// the end is on the commented line).
var errorSources = []struct{ name, src string }{
	{"upper case name", `optimizer Adam // ERROR col=11 "optimizer name Adam must be lower case"` + oneStep},
	{"Go keyword name", `optimizer func // ERROR col=11 "optimizer name func is reserved in Go"` + oneStep},
	{"Go keyword name type", `optimizer type // ERROR col=11 "optimizer name type is reserved in Go"` + oneStep},
	{"long name", `optimizer ` + strings.Repeat("a", 65) + ` // ERROR col=11 "optimizer name is 65 characters long; at most 64"` + oneStep},
	{"package main", `optimizer main // ERROR col=11 "optimizer name main is reserved in Go"` + oneStep},
	{"test file", `optimizer blt_test // ERROR col=11 "optimizer name blt_test ends in _test: Go would take the generated blt_test.go for a test file"` + oneStep},
	{"package init", `optimizer init // ERROR col=11 "optimizer name init is reserved in Go"` + oneStep},
	{"underscore name", `optimizer _x // ERROR col=11 "optimizer name _x must be"` + oneStep},
	{"blank name", `optimizer _ // ERROR col=11 "optimizer name _ must be"` + oneStep},
	{"number as name", `optimizer 9x // ERROR col=11 "expected name, found number 9"` + oneStep},
	{"keyword as name", "optimizer step // ERROR col=11 \"expected name, found keyword step\"" + oneStep},
	{"missing optimizer", `hyper lr = 1 // ERROR col=1 "missing optimizer declaration \(optimizer NAME\)"` + oneStep},
	{"empty file", `// ERROR col=1 "missing optimizer declaration"`},
	{"missing step", `optimizer x // ERROR col=62 "missing step \{ \.\.\. \} block"`},
	{"missing brace", "optimizer x\nstep {\n\ttheta = theta // ERROR col=89 \"expected '}' to close the step block, found end of file\""},
	{"missing open brace", "optimizer x\nstep theta = theta // ERROR col=6 \"expected '\\{' to open the step block, found name theta\"\n}"},
	{"unfinished expression", "optimizer x\nstep {\n\ttheta = theta - // ERROR col=74 \"expected expression, found end of file\""},
	{"empty step", "optimizer x\nstep {} // ERROR col=1 \"step never updates theta\""},
	{"constant overflow", "optimizer x\nstate m = 10 ** 400 // ERROR col=14 \"the constant 10 \\*\\* 400 is \\+Inf: constants must be finite\"\nstep { m = m\n theta = theta }"},
	{"constant NaN", "optimizer x\nstep { theta = theta * sqrt(-1) } // ERROR col=24 \"the constant sqrt\\(-1\\) is NaN\""},
	{"CR-only line endings", "optimizer x\rstep { theta = theta }\r // ERROR col=12 \"a carriage return without a newline: fibergen reads LF or CRLF line endings\""},
	{"line continued before an operator", "optimizer x\nhyper lr = 1\nstep {\n\ttheta = theta - lr\n\t\t* g // ERROR col=3 \"found '\\*': the line before ends the statement, as it ends in a name, a number or '\\)'; to continue an expression on the next line, end the line before with the operator\"\n}"},
	{"line continued", "optimizer x\nhyper lr = 1\nstep {\n\ttheta = theta -\n\t\tlr * g +\n\t\t(lr // ERROR col=7 \"expected '\\)', found newline\"\n}"},
}

const oneStep = "\nstep { theta = theta }\n"

func TestErrorSources(t *testing.T) {
	for _, tt := range errorSources {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, "x.dsl", []byte(tt.src)) })
	}
}

// TestTorchKeys: every key a torch param group gives a meaning of its own
// (docs/dsl.md, alias) is refused as an alias and as a hyper's name, at the
// name; torch's names for quantities a hyper may be are accepted.
func TestTorchKeys(t *testing.T) {
	for _, key := range []string{"params", "foreach", "fused", "capturable", "differentiable", "maximize",
		"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum", "swa_lr"} {
		alias := fmt.Sprintf("optimizer x\nhyper a = 1 alias %s // ERROR col=19 \"^alias %s of hyper a is a key of torch's param groups \\(.+\\); choose another name$\"\nstep { theta = theta - a * g }\n", key, key)
		hyper := fmt.Sprintf("optimizer x\nhyper %s = 1 // ERROR col=7 \"^hyper %s: its name is a key of torch's param groups \\(.+\\); choose another$\"\nstep { theta = theta - %s * g }\n", key, key, key)
		t.Run(key, func(t *testing.T) {
			checkErrors(t, "alias.dsl", []byte(alias))
			checkErrors(t, "hyper.dsl", []byte(hyper))
		})
	}
	for _, key := range []string{"lr", "betas", "weight_decay", "eps", "momentum", "dampening", "alpha", "rho"} {
		src := fmt.Sprintf("optimizer x\nhyper a = 1 alias %s\nstep { theta = theta - a * g }\n", key)
		if _, _, errs := dsl.Parse("ok.dsl", []byte(src)); len(errs) > 0 {
			t.Errorf("alias %s: %v", key, errs)
		}
	}
}

// TestNestingLimit builds expressions at and past the nesting limit: one
// level less than the limit parses, the limit itself is an error, never a
// stack overflow, whatever the input's size.
func TestNestingLimit(t *testing.T) {
	tests := []struct {
		name string
		expr func(n int) string
		ok   int // the largest n that parses
	}{
		{"parens", func(n int) string { return strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }, 99},
		{"negations", func(n int) string { return strings.Repeat("-", n) + "1" }, 198},
		{"powers", func(n int) string { return strings.Repeat("1 ** ", n) + "1" }, 198},
		{"calls", func(n int) string { return strings.Repeat("sqrt(", n) + "1" + strings.Repeat(")", n) }, 99},
		{"sum", func(n int) string { return "1" + strings.Repeat(" + 1", n) }, 198},
		{"product", func(n int) string { return "1" + strings.Repeat(" * 1", n) }, 198},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range []int{tt.ok, tt.ok + 1, 100000} {
				src := fmt.Sprintf("optimizer x\nstate m = %s\nstep {\n\tm = m\n\ttheta = theta\n}\n", tt.expr(n))
				_, _, errs := dsl.Parse("deep.dsl", []byte(src))
				if n == tt.ok {
					if len(errs) > 0 {
						t.Errorf("n = %d: %v", n, errs)
					}
					continue
				}
				if len(errs) != 1 || errs[0].Pos.Line != 2 || !strings.Contains(errs[0].Msg, "expression too long or nested too deeply (more than 200 levels)") {
					t.Errorf("n = %d: got %v, want one error about nesting on line 2", n, errs)
				}
			}
		})
	}
}

// TestLimits: a file past a limit of docs/dsl.md is one clear error at the
// first thing past it; a file at the limit checks.
func TestLimits(t *testing.T) {
	states := func(n int) string {
		var b strings.Builder
		b.WriteString("optimizer x\n")
		for i := range n {
			fmt.Fprintf(&b, "state s%d = 0\n", i)
		}
		b.WriteString("step {\n")
		for i := range n {
			fmt.Fprintf(&b, "\ts%d = s%d + g\n", i, i)
		}
		b.WriteString("\ttheta = theta\n}\n")
		return b.String()
	}
	statements := func(n int) string {
		var b strings.Builder
		b.WriteString("optimizer x\nstep {\n\tx0 = g\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "\tx%d = x%d * 2\n", i, i-1)
		}
		fmt.Fprintf(&b, "\ttheta = theta - x%d\n}\n", n-1)
		return b.String()
	}
	for _, c := range []struct {
		name, src, want string
	}{
		{"states at the limit", states(dsl.MaxStates), ""},
		{"states past the limit", states(dsl.MaxStates + 1), "x.dsl:258:1: more than 256 states: each is a parameter of the kernels, and CUDA limits a kernel's parameters to 4 KiB"},
		{"statements at the limit", statements(dsl.MaxStatements - 1), ""},
		{"statements past the limit", statements(dsl.MaxStatements), fmt.Sprintf("x.dsl:%d:2: more than %d statements in step", 3+dsl.MaxStatements, dsl.MaxStatements)},
		{"file past the limit", "optimizer x\n" + strings.Repeat("#", dsl.MaxSourceBytes), "x.dsl:1:1: the file is 1048588 bytes; fibergen reads at most 1048576 (1 MiB)"},
	} {
		_, _, errs := dsl.Parse("x.dsl", []byte(c.src))
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("%s: %v", c.name, errs)
		case c.want != "" && (len(errs) != 1 || errs[0].Error() != c.want):
			t.Errorf("%s: %v, want %s", c.name, errs, c.want)
		}
	}
}
