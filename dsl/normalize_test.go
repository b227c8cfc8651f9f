package dsl_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
)

func at(file string, line, col int, msg string) *dsl.Error {
	return &dsl.Error{Pos: dsl.Pos{Filename: file, Offset: 100*line + col, Line: line, Column: col}, Msg: msg}
}

// render prints a list one error a line, for comparisons.
func render(l dsl.ErrorList) string {
	var b strings.Builder
	for _, e := range l {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// lines returns errors "e1".."en" on lines 1..n of a.dsl, last line first.
func lines(n int) dsl.ErrorList {
	var l dsl.ErrorList
	for i := n; i >= 1; i-- {
		l = append(l, at("a.dsl", i, 1, fmt.Sprintf("e%d", i)))
	}
	return l
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   dsl.ErrorList
		want string
	}{
		{"empty", nil, ""},
		{
			"sorted by file, line, column",
			dsl.ErrorList{at("b.dsl", 1, 1, "b"), at("a.dsl", 2, 1, "a2"), at("a.dsl", 1, 5, "a1")},
			"a.dsl:1:5: a1\na.dsl:2:1: a2\nb.dsl:1:1: b\n",
		},
		{
			"first of a line by column",
			dsl.ErrorList{at("a.dsl", 3, 9, "later"), at("a.dsl", 3, 2, "first"), at("a.dsl", 3, 5, "middle")},
			"a.dsl:3:2: first\n",
		},
		{
			"same position: first reported", // the scanner's error before the parser's
			dsl.ErrorList{at("a.dsl", 1, 4, "unexpected character '@'"), at("a.dsl", 1, 4, "expected expression")},
			"a.dsl:1:4: unexpected character '@'\n",
		},
		{
			"same line in two files",
			dsl.ErrorList{at("b.dsl", 1, 1, "b"), at("a.dsl", 1, 1, "a")},
			"a.dsl:1:1: a\nb.dsl:1:1: b\n",
		},
		{"ten: no cap", lines(10), render(reverse(lines(10)))},
		{"eleven", lines(11), render(reverse(lines(10))) + "a.dsl:11:1: too many errors (1 more)\n"},
		{"fifteen", lines(15), render(reverse(lines(10))) + "a.dsl:11:1: too many errors (5 more)\n"},
		{
			"duplicates do not count",
			append(lines(12), at("a.dsl", 12, 7, "dup"), at("a.dsl", 3, 7, "dup")),
			render(reverse(lines(10))) + "a.dsl:11:1: too many errors (2 more)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := append(dsl.ErrorList(nil), tt.in...)
			l.Normalize()
			if got := render(l); got != tt.want {
				t.Fatalf("got:\n%swant:\n%s", got, tt.want)
			}
			l.Normalize()
			if got := render(l); got != tt.want {
				t.Errorf("normalizing twice gives:\n%swant:\n%s", got, tt.want)
			}
		})
	}
}

func reverse(l dsl.ErrorList) dsl.ErrorList {
	out := make(dsl.ErrorList, len(l))
	for i, e := range l {
		out[len(l)-1-i] = e
	}
	return out
}

// TestParseErrorCap checks the cap on errors from the parser and the checker
// together: 15 syntax errors and 15 undefined names.
func TestParseErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("optimizer cap\n")
	for i := range 15 {
		fmt.Fprintf(&b, "hyper h%d 1\n", i) // missing '='
	}
	b.WriteString("step {\n")
	for i := range 15 {
		fmt.Fprintf(&b, "\tl%d = u%d\n", i, i) // undefined
	}
	b.WriteString("\ttheta = theta\n}\n")
	_, _, errs := dsl.Parse("cap.dsl", []byte(b.String()))
	if len(errs) != dsl.MaxErrors+1 {
		t.Fatalf("got %d errors, want %d:\n%s", len(errs), dsl.MaxErrors+1, render(errs))
	}
	last := errs[dsl.MaxErrors]
	if last.Msg != "too many errors (20 more)" || last.Pos.Line != 12 {
		t.Errorf("last entry %v, want cap.dsl:12:...: too many errors (20 more)", last)
	}
	for _, e := range errs[:dsl.MaxErrors] {
		if !strings.HasPrefix(e.Msg, "expected '=' and the hyper's default value") {
			t.Errorf("unexpected error %v", e)
		}
	}
}

func TestErrorListError(t *testing.T) {
	var none dsl.ErrorList
	if none.Err() != nil || none.Error() != "no errors" {
		t.Errorf("empty list: Err() = %v, Error() = %q", none.Err(), none.Error())
	}
	one := dsl.ErrorList{at("a.dsl", 1, 2, "bad")}
	if one.Err() == nil || one.Error() != "a.dsl:1:2: bad" {
		t.Errorf("one error: Error() = %q", one.Error())
	}
	two := append(one, at("a.dsl", 3, 1, "worse"))
	if two.Error() != "a.dsl:1:2: bad (and 1 more error)" {
		t.Errorf("two errors: Error() = %q", two.Error())
	}
	three := append(two, at("a.dsl", 4, 1, "worst"))
	if three.Error() != "a.dsl:1:2: bad (and 2 more errors)" {
		t.Errorf("three errors: Error() = %q", three.Error())
	}
}
