package dsl

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxErrors is the number of errors an ErrorList keeps after Sort; the rest
// are summarized in one line.
const MaxErrors = 10

// Error is a positioned diagnostic.
type Error struct {
	Pos Pos
	Msg string

	more int // for the "too many errors" entry: how many it stands for
}

// Error formats the error as file:line:col: message.
func (e *Error) Error() string {
	if e.Pos.IsValid() || e.Pos.Filename != "" {
		return e.Pos.String() + ": " + e.Msg
	}
	return e.Msg
}

// ErrorList is a list of positioned errors, in the style of
// go/scanner.ErrorList. The zero value is an empty list ready to use.
type ErrorList []*Error

// Add appends an error at pos.
func (l *ErrorList) Add(pos Pos, msg string) { *l = append(*l, &Error{Pos: pos, Msg: msg}) }

// Addf appends a formatted error at pos.
func (l *ErrorList) Addf(pos Pos, format string, args ...any) {
	l.Add(pos, fmt.Sprintf(format, args...))
}

// Len, Swap and Less make an ErrorList sortable by position.
func (l ErrorList) Len() int      { return len(l) }
func (l ErrorList) Swap(i, j int) { l[i], l[j] = l[j], l[i] }
func (l ErrorList) Less(i, j int) bool {
	a, b := l[i].Pos, l[j].Pos
	if a.Filename != b.Filename {
		return a.Filename < b.Filename
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Column < b.Column
}

// Sort sorts the list by position. It is stable: errors at one position keep
// the order they were reported in, so the scanner's error about a bad
// character comes before the parser's about the token it made.
func (l ErrorList) Sort() { sort.Stable(l) }

// Normalize sorts the list, keeps the first error of every line and, past
// MaxErrors, replaces the rest with a single "too many errors" entry.
// Normalizing a normalized list changes nothing.
func (l *ErrorList) Normalize() {
	l.Sort()
	var out ErrorList
	var last Pos
	for i, e := range *l {
		if i > 0 && e.Pos.Filename == last.Filename && e.Pos.Line == last.Line {
			continue
		}
		last = e.Pos
		out = append(out, e)
	}
	if len(out) > MaxErrors {
		extra := 0
		for _, e := range out[MaxErrors:] {
			extra += max(e.more, 1)
		}
		msg := fmt.Sprintf("too many errors (%d more)", extra)
		out = append(out[:MaxErrors:MaxErrors], &Error{Pos: out[MaxErrors].Pos, Msg: msg, more: extra})
	}
	*l = out
}

// Error returns the first error and a count of the others.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more error%s)", l[0], len(l)-1, plural(len(l)-1))
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Echo bounds on what Print writes of one error, so that a list of errors
// fits a screen whatever the source: a line of a megabyte (a 10⁵-deep
// parenthesis) echoes as a window of at most maxEchoColumns columns around
// the caret, and a message that quotes a long expression keeps its first and
// last maxMessageRunes/2 characters. Each cut is marked with "…".
const (
	maxEchoColumns  = 160
	maxMessageRunes = 480
)

// Print writes the errors of l to w as "file:line:col: message", each
// followed by the source line and a caret under the column, when src holds
// that line. A long line is shown as a window around the caret and a long
// message is shortened in the middle; past MaxErrors+1 errors (a list that
// Normalize did not cap), one line counts the rest.
func (l ErrorList) Print(w io.Writer, src []byte) {
	for i, e := range l {
		if i == MaxErrors+1 {
			fmt.Fprintf(w, "too many errors (%d more)\n", len(l)-i)
			return
		}
		fmt.Fprintln(w, shorten(e.Error(), maxMessageRunes))
		if line, caret, ok := caretLines(src, e.Pos); ok {
			fmt.Fprintf(w, "\t%s\n\t%s\n", line, caret)
		}
	}
}

// shorten returns s, or, when s has more than limit runes, its first and
// last limit/2 runes joined by " … ".
func shorten(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit/2]) + " … " + string(r[len(r)-limit/2:])
}

// caretLines returns the source line holding pos and a line with a caret
// under pos. Columns count bytes, so the caret line is built from the
// characters before pos, as wide as a terminal shows them: tabs are kept, a
// combining or invisible character takes no room and a wide (East Asian)
// character two. A line wider than maxEchoColumns is cut to a window around
// pos, each cut end marked with "…".
func caretLines(src []byte, pos Pos) (line, caret string, ok bool) {
	if !pos.IsValid() || pos.Offset < 0 || pos.Offset > len(src) {
		return "", "", false
	}
	// A carriage return ends a line too, so that a file with CR-only line
	// endings does not echo whole (the terminal would overprint it).
	start := bytes.LastIndexAny(src[:pos.Offset], "\n\r") + 1
	end := len(src)
	if i := bytes.IndexAny(src[pos.Offset:], "\n\r"); i >= 0 {
		end = pos.Offset + i
	}
	full, at := string(src[start:end]), pos.Offset-start
	lo, hi := echoWindow(full, at, maxEchoColumns)
	var b strings.Builder
	line = full[lo:hi]
	if lo > 0 {
		line = "…" + line
		b.WriteByte(' ')
	}
	if hi < len(full) {
		line += "…"
	}
	for _, r := range full[lo:at] {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteString("  "[:runeWidth(r)])
		}
	}
	b.WriteByte('^')
	return line, b.String(), true
}

// echoWindow returns the bytes [lo, hi) of line that Print echoes for a
// caret at byte at: the whole line when it takes at most width columns, else
// a window of at most width-2 columns (room for two "…") holding at, with
// up to half of it before at.
func echoWindow(line string, at, width int) (lo, hi int) {
	if echoColumns(line) <= width {
		return 0, len(line)
	}
	budget, used := width-2, 0
	lo, hi = at, at
	grow := func(limit int, left bool) {
		for left && lo > 0 || !left && hi < len(line) {
			var r rune
			var n int
			if left {
				r, n = utf8.DecodeLastRuneInString(line[:lo])
			} else {
				r, n = utf8.DecodeRuneInString(line[hi:])
			}
			if used+echoCost(r) > limit {
				return
			}
			if used += echoCost(r); left {
				lo -= n
			} else {
				hi += n
			}
		}
	}
	grow(budget/2, true) // half before the caret
	grow(budget, false)  // the rest after it
	grow(budget, true)   // and before it what the end of the line left over
	return lo, hi
}

// echoColumns is the room line takes by echoCost.
func echoColumns(line string) int {
	n := 0
	for _, r := range line {
		n += echoCost(r)
	}
	return n
}

// echoCost is the room r takes in an echoed line, counted high so that the
// window is bounded in bytes too: a tab up to 8 columns, any other
// character at least 1.
func echoCost(r rune) int {
	if r == '\t' {
		return 8
	}
	return max(runeWidth(r), 1)
}

// runeWidth is the number of terminal columns r takes: 0, 1 or 2.
func runeWidth(r rune) int {
	switch {
	case r < 0x300:
		if r < ' ' || r >= 0x7f && r < 0xa0 {
			return 0
		}
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case isWide(r):
		return 2
	}
	return 1
}

// wide lists the East Asian wide and fullwidth blocks (Hangul Jamo, CJK,
// Hangul syllables, fullwidth forms, emoji, the supplementary ideographs).
var wide = [][2]rune{
	{0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf},
	{0x4e00, 0x9fff}, {0xa000, 0xa4cf}, {0xac00, 0xd7a3}, {0xf900, 0xfaff},
	{0xfe30, 0xfe4f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x1f300, 0x1f64f},
	{0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
}

func isWide(r rune) bool {
	for _, w := range wide {
		if r >= w[0] && r <= w[1] {
			return true
		}
	}
	return false
}
