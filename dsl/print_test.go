package dsl_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/internal/golden"
)

// TestPrintGolden prints the errors of the files in testdata/print the way
// fibergen check does.
func TestPrintGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/print/*.dsl")
	if len(files) == 0 {
		t.Fatal("no testdata/print/*.dsl")
	}
	for _, path := range files {
		src := readFile(t, path)
		_, _, errs := dsl.Parse(path, src)
		if len(errs) == 0 {
			t.Errorf("%s: no errors", path)
		}
		var b bytes.Buffer
		errs.Print(&b, src)
		golden.Check(t, strings.TrimSuffix(path, ".dsl")+".golden", b.Bytes())
	}
}

// posAt returns the position of the n-th occurrence (from 1) of sub in src.
func posAt(t *testing.T, src, sub string, n int) dsl.Pos {
	t.Helper()
	off := -1
	for range n {
		i := strings.Index(src[off+1:], sub)
		if i < 0 {
			t.Fatalf("%q has fewer than %d %q", src, n, sub)
		}
		off += 1 + i
	}
	line := strings.Count(src[:off], "\n") + 1
	col := off - (strings.LastIndexByte(src[:off], '\n') + 1) + 1
	return dsl.Pos{Filename: "u.dsl", Offset: off, Line: line, Column: col}
}

// TestPrintCarets checks that the caret stands under the erroneous
// character although columns count bytes: a multi-byte character before it
// takes one column, a wide one two, a combining one none, a tab a tab.
func TestPrintCarets(t *testing.T) {
	const src = "a = é + y\n" +
		"\tb = 中文 + y\n" +
		"  c = e\u0301 + y\n" +
		"d = \xff + y\r\n" +
		"e\t= 🙂 + y\n" +
		"f = 1\rg = y\r" +
		"λ"
	tests := []struct {
		n     int // which y
		line  string
		caret string
	}{
		{1, "a = é + y", "        ^"},
		{2, "\tb = 中文 + y", "\t           ^"},
		{3, "  c = e\u0301 + y", "          ^"},
		{4, "d = \xff + y", "        ^"},
		{5, "e\t= 🙂 + y", " \t       ^"},
		{6, "g = y", "    ^"}, // a lone carriage return ends the line shown
	}
	for _, tt := range tests {
		pos := posAt(t, src, "y", tt.n)
		var b bytes.Buffer
		dsl.ErrorList{{Pos: pos, Msg: "m"}}.Print(&b, []byte(src))
		want := fmt.Sprintf("%s: m\n\t%s\n\t%s\n", pos, tt.line, tt.caret)
		if b.String() != want {
			t.Errorf("y number %d:\ngot:\n%s\nwant:\n%s", tt.n, b.String(), want)
		}
	}
}

// TestPrintEdges covers positions at the end of the file, positions Print
// cannot show and a missing source.
func TestPrintEdges(t *testing.T) {
	src := []byte("optimizer x\nstep {")
	end := dsl.Pos{Filename: "e.dsl", Offset: len(src), Line: 2, Column: 7}
	tests := []struct {
		name string
		errs dsl.ErrorList
		src  []byte
		want string
	}{
		{"end of file", dsl.ErrorList{{Pos: end, Msg: "m"}}, src, "e.dsl:2:7: m\n\tstep {\n\t      ^\n"},
		{"after a final newline", dsl.ErrorList{{Pos: dsl.Pos{Offset: 6, Line: 2, Column: 1}, Msg: "m"}}, []byte("a = 1\n"), "2:1: m\n\t\n\t^\n"},
		{"no source", dsl.ErrorList{{Pos: end, Msg: "m"}}, nil, "e.dsl:2:7: m\n"},
		{"offset past the end", dsl.ErrorList{{Pos: dsl.Pos{Offset: 99, Line: 9, Column: 1}, Msg: "m"}}, src, "9:1: m\n"},
		{"no position", dsl.ErrorList{{Msg: "m"}}, src, "m\n"},
		{"file only", dsl.ErrorList{{Pos: dsl.Pos{Filename: "f.dsl"}, Msg: "m"}}, src, "f.dsl: m\n"},
		{"empty list", nil, src, ""},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		tt.errs.Print(&b, tt.src)
		if b.String() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}
