package dsl

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// MaxErrors is the number of errors an ErrorList keeps after Sort; the rest
// are summarized in one line.
const MaxErrors = 10

// Error is a positioned diagnostic.
type Error struct {
	Pos Pos
	Msg string
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
func (l *ErrorList) Add(pos Pos, msg string) { *l = append(*l, &Error{pos, msg}) }

// Addf appends a formatted error at pos.
func (l *ErrorList) Addf(pos Pos, format string, args ...any) {
	l.Add(pos, fmt.Sprintf(format, args...))
}

// Len, Swap and Less make an ErrorList sortable by position, then message.
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
	if a.Column != b.Column {
		return a.Column < b.Column
	}
	return l[i].Msg < l[j].Msg
}

// Sort sorts the list by position.
func (l ErrorList) Sort() { sort.Stable(l) }

// Normalize sorts the list, keeps the first error of every line and, past
// MaxErrors, replaces the rest with a single "too many errors" entry.
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
		extra := len(out) - MaxErrors
		out = append(out[:MaxErrors:MaxErrors], &Error{out[MaxErrors].Pos, fmt.Sprintf("too many errors (%d more)", extra)})
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
	return fmt.Sprintf("%s (and %d more errors)", l[0], len(l)-1)
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Print writes every error of l to w as "file:line:col: message", followed by
// the source line and a caret under the column, when src holds that line.
func (l ErrorList) Print(w io.Writer, src []byte) {
	for _, e := range l {
		fmt.Fprintln(w, e.Error())
		if line, caret, ok := caretLines(src, e.Pos); ok {
			fmt.Fprintf(w, "\t%s\n\t%s\n", line, caret)
		}
	}
}

// caretLines returns the source line holding pos and a line with a caret
// under pos, keeping tabs so that the caret lines up.
func caretLines(src []byte, pos Pos) (line, caret string, ok bool) {
	if !pos.IsValid() || pos.Offset < 0 || pos.Offset > len(src) {
		return "", "", false
	}
	start := strings.LastIndexByte(string(src[:pos.Offset]), '\n') + 1
	end := len(src)
	if i := strings.IndexByte(string(src[pos.Offset:]), '\n'); i >= 0 {
		end = pos.Offset + i
	}
	line = strings.TrimRight(string(src[start:end]), "\r")
	var b strings.Builder
	for _, r := range string(src[start:pos.Offset]) {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteByte('^')
	return line, b.String(), true
}
