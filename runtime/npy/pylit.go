package npy

import (
	"fmt"
	"strconv"
)

// The .npy header is a Python dict literal. This file holds a small parser
// for the subset of Python literals that can appear in it: dicts, tuples,
// lists, strings, integers (with an optional Python 2 'L' suffix), True,
// False and None. Parsed values have the Go types below, string, bool,
// int64, or nil for None.

type (
	pyTuple []any
	pyList  []any
	pyDict  map[string]any
)

// maxPyDepth bounds nesting so hostile headers cannot recurse deeply.
const maxPyDepth = 32

type pyParser struct {
	s     []byte
	pos   int
	depth int
}

// parsePyLiteral parses s as a single Python literal surrounded by optional
// whitespace.
func parsePyLiteral(s []byte) (any, error) {
	p := &pyParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return nil, p.errorf("unexpected %s after the literal", p.describe())
	}
	return v, nil
}

func (p *pyParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// describe names the byte at the current position for error messages.
func (p *pyParser) describe() string {
	if p.pos >= len(p.s) {
		return "end of header"
	}
	return strconv.QuoteRune(rune(p.s[p.pos]))
}

func (p *pyParser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			p.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (p *pyParser) peek() byte {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

// expect consumes byte c (after whitespace) or fails.
func (p *pyParser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("expected %q, found %s", c, p.describe())
	}
	p.pos++
	return nil
}

func (p *pyParser) value() (any, error) {
	if p.depth >= maxPyDepth {
		return nil, p.errorf("nesting deeper than %d", maxPyDepth)
	}
	p.depth++
	defer func() { p.depth-- }()
	switch c := p.peek(); {
	case c == '{':
		return p.dict()
	case c == '(':
		return p.tuple()
	case c == '[':
		return p.list()
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || isDigit(c):
		return p.integer()
	case isLetter(c):
		return p.name()
	}
	return nil, p.errorf("unexpected %s", p.describe())
}

// sequence parses comma-separated values up to the closing byte, allowing a
// trailing comma. The opening byte has been consumed. It reports whether a
// comma was seen, which distinguishes "(5,)" from "(5)".
func (p *pyParser) sequence(closing byte) ([]any, bool, error) {
	items := []any{}
	comma := false
	for p.peek() != closing {
		v, err := p.value()
		if err != nil {
			return nil, false, err
		}
		items = append(items, v)
		if p.peek() != ',' {
			break
		}
		p.pos++
		comma = true
	}
	if err := p.expect(closing); err != nil {
		return nil, false, err
	}
	return items, comma, nil
}

func (p *pyParser) tuple() (any, error) {
	p.pos++ // '('
	items, comma, err := p.sequence(')')
	if err != nil {
		return nil, err
	}
	if len(items) == 1 && !comma {
		return items[0], nil // parenthesised expression, not a tuple
	}
	return pyTuple(items), nil
}

func (p *pyParser) list() (any, error) {
	p.pos++ // '['
	items, _, err := p.sequence(']')
	if err != nil {
		return nil, err
	}
	return pyList(items), nil
}

func (p *pyParser) dict() (any, error) {
	p.pos++ // '{'
	d := pyDict{}
	for p.peek() != '}' {
		if err := p.dictEntry(d); err != nil {
			return nil, err
		}
		if p.peek() != ',' {
			break
		}
		p.pos++
	}
	if err := p.expect('}'); err != nil {
		return nil, err
	}
	return d, nil
}

// dictEntry parses one "key: value" pair into d. Like Python, a repeated
// key keeps its last value.
func (p *pyParser) dictEntry(d pyDict) error {
	start := p.pos
	k, err := p.value()
	if err != nil {
		return err
	}
	key, ok := k.(string)
	if !ok {
		p.pos = start
		return p.errorf("dict key is not a string")
	}
	if err := p.expect(':'); err != nil {
		return err
	}
	v, err := p.value()
	if err != nil {
		return err
	}
	d[key] = v
	return nil
}

// str parses a quoted string. A backslash takes the next byte literally,
// which is enough for the dtype strings NumPy writes.
func (p *pyParser) str() (any, error) {
	quote := p.s[p.pos]
	p.pos++
	var out []byte
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch {
		case c == quote:
			return string(out), nil
		case c == '\n':
			return nil, p.errorf("newline inside string")
		case c == '\\' && p.pos < len(p.s):
			out = append(out, p.s[p.pos])
			p.pos++
		default:
			out = append(out, c)
		}
	}
	return nil, p.errorf("unterminated string")
}

// integer parses an optionally negative decimal integer, skipping the 'L'
// suffix that Python 2 wrote for long integers.
func (p *pyParser) integer() (any, error) {
	start := p.pos
	if p.s[p.pos] == '-' {
		p.pos++
	}
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		p.pos++
	}
	text := string(p.s[start:p.pos])
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		p.pos = start
		return nil, p.errorf("bad or out-of-range integer %q", text)
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'L' || p.s[p.pos] == 'l') {
		p.pos++
	}
	return n, nil
}

// name parses True, False or None.
func (p *pyParser) name() (any, error) {
	start := p.pos
	for p.pos < len(p.s) && (isLetter(p.s[p.pos]) || isDigit(p.s[p.pos])) {
		p.pos++
	}
	switch word := string(p.s[start:p.pos]); word {
	case "True":
		return true, nil
	case "False":
		return false, nil
	case "None":
		return nil, nil
	default:
		p.pos = start
		return nil, p.errorf("unexpected name %q", word)
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isLetter(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
