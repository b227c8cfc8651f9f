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

// caretTarget returns what the caret line caret points at in the echoed
// line: the rest of line from the character under the caret. Tabs in the
// caret line stand for the tabs of line, spaces for the columns of any
// other character (the widths TestPrintCarets holds: 中, 文 and 🙂 two,
// a combining accent none, the rest here one).
func caretTarget(t *testing.T, line, caret string) string {
	t.Helper()
	pad, ok := strings.CutSuffix(caret, "^")
	if !ok {
		t.Fatalf("caret line %q does not end with ^", caret)
	}
	for i, r := range line {
		if pad == "" && r != '\u0301' { // an accent after the column is the character before's
			return line[i:]
		}
		w := " "
		switch {
		case r == '\t':
			w = "\t"
		case r == '中' || r == '文' || r == '🙂':
			w = "  "
		case r == '\u0301':
			w = ""
		}
		if !strings.HasPrefix(pad, w) {
			t.Fatalf("caret line %q does not follow %q", caret, line)
		}
		pad = pad[len(w):]
	}
	if pad != "" {
		t.Fatalf("caret %q past the end of %q", caret, line)
	}
	return ""
}

// columns is the width of an echoed line: tabs at 8, 中, 文 and 🙂 at 2.
func columns(line string) int {
	n := 0
	for _, r := range line {
		switch {
		case r == '\t':
			n += 8
		case r == '中' || r == '文' || r == '🙂':
			n += 2
		default:
			n++
		}
	}
	return n
}

// TestPrintLongLines: a line too wide for a screen is echoed as a window of
// at most 160 columns around the caret, each cut marked with "…", and the
// caret stands under the erroneous character; a line that fits is echoed
// whole.
func TestPrintLongLines(t *testing.T) {
	long := strings.Repeat("a + ", 500)
	tests := []struct {
		name       string
		line       string
		at         string // the text the error points at; its first occurrence
		cutL, cutR bool   // whether the window cuts the start, the end
	}{
		{"fits", "x = " + strings.Repeat("b", 150) + " + Y", "Y", false, false},
		{"caret in the middle", long + "Y" + long, "Y", true, true},
		{"caret near the start", "Y" + long, "Y", false, true},
		{"caret near the end", long + "Y", "Y", true, false},
		{"caret at the end of the line", long, "\n", true, false},
		{"wide characters", strings.Repeat("中文 ", 300) + "Y" + strings.Repeat(" 中", 300), "Y", true, true},
		{"tabs", strings.Repeat("\t+ a", 300) + "Y" + strings.Repeat("\tb", 300), "Y", true, true},
		{"combining characters", strings.Repeat("e\u0301", 5000) + "Y" + strings.Repeat("e\u0301", 5000), "Y", true, true},
	}
	for _, tt := range tests {
		src := "optimizer x\n" + tt.line + "\nnext\n"
		pos := posAt(t, src, tt.at, 1)
		if tt.at == "\n" {
			pos = posAt(t, src, "\n", 2)
		}
		var b bytes.Buffer
		dsl.ErrorList{{Pos: pos, Msg: "m"}}.Print(&b, []byte(src))
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 3 || lines[0] != pos.String()+": m" {
			t.Fatalf("%s: printed %q", tt.name, b.String())
		}
		echo, caret := strings.TrimPrefix(lines[1], "\t"), strings.TrimPrefix(lines[2], "\t")
		if w := columns(echo); w > 160 {
			t.Errorf("%s: the echoed line takes %d columns, want at most 160", tt.name, w)
		}
		if strings.HasPrefix(echo, "…") != tt.cutL || strings.HasSuffix(echo, "…") != tt.cutR {
			t.Errorf("%s: cuts at the start %v, at the end %v; want %v, %v", tt.name,
				strings.HasPrefix(echo, "…"), strings.HasSuffix(echo, "…"), tt.cutL, tt.cutR)
		}
		if !tt.cutL && !tt.cutR && echo != tt.line {
			t.Errorf("%s: echoed %q, want the line whole", tt.name, echo)
		}
		got := caretTarget(t, echo, caret)
		if want := strings.TrimSuffix(tt.at, "\n"); !strings.HasPrefix(got, want) || want == "" && got != "" {
			t.Errorf("%s: the caret points at %.10q, want %q", tt.name, got, want)
		}
	}
}

// TestPrintDeepParens: the error of a 10⁵-deep parenthesis, a line of
// 200 KB, prints in a few lines of bounded size with the caret under the
// parenthesis that is one too deep.
func TestPrintDeepParens(t *testing.T) {
	const depth = 100000
	line := "\tm = " + strings.Repeat("(", depth) + "g" + strings.Repeat(")", depth)
	src := "optimizer deep\nstate m = 0\nstep {\n" + line + "\n\ttheta = theta - m\n}\n"
	_, _, errs := dsl.Parse("deep.dsl", []byte(src))
	if len(errs) == 0 {
		t.Fatal("no error")
	}
	var b bytes.Buffer
	errs.Print(&b, []byte(src))
	if b.Len() > 4096 || strings.Count(b.String(), "\n") > 3*(dsl.MaxErrors+1) {
		t.Fatalf("printed %d bytes in %d lines, want a screenful", b.Len(), strings.Count(b.String(), "\n"))
	}
	lines := strings.Split(b.String(), "\n")
	echo, caret := strings.TrimPrefix(lines[1], "\t"), strings.TrimPrefix(lines[2], "\t")
	got := caretTarget(t, echo, caret)
	want := src[errs[0].Pos.Offset:]
	if got == "" || !strings.HasPrefix(want, strings.TrimSuffix(got, "…")) {
		t.Errorf("the caret points at %.20q, the error at %.20q", got, want)
	}
}

// TestPrintLongMessage: a message of more than 480 characters keeps its
// start and its end.
func TestPrintLongMessage(t *testing.T) {
	msg := "in `x = " + strings.Repeat("g * ", 1000) + "g`, `g * g` multiplies two noisy values"
	var b bytes.Buffer
	dsl.ErrorList{{Msg: msg}}.Print(&b, nil)
	got := strings.TrimSuffix(b.String(), "\n")
	if n := len([]rune(got)); n > 483 || !strings.HasPrefix(got, "in `x = g * ") || !strings.HasSuffix(got, "multiplies two noisy values") || !strings.Contains(got, " … ") {
		t.Errorf("printed %d characters: %q", n, got)
	}
}

// TestPrintCapsCount: a list longer than MaxErrors+1 (not normalized) prints
// MaxErrors+1 errors and a count of the rest.
func TestPrintCapsCount(t *testing.T) {
	var errs dsl.ErrorList
	src := strings.Repeat("x\n", 50)
	for i := range 50 {
		errs.Add(dsl.Pos{Filename: "f", Offset: 2 * i, Line: i + 1, Column: 1}, "m")
	}
	var b bytes.Buffer
	errs.Print(&b, []byte(src))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3*(dsl.MaxErrors+1)+1 || lines[len(lines)-1] != fmt.Sprintf("too many errors (%d more)", 50-dsl.MaxErrors-1) {
		t.Errorf("printed %d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}
