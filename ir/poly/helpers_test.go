package poly

import (
	"fmt"
	"math/big"
	"strconv"
	"testing"
	"unicode"
)

// parse reads a polynomial written like "2 - x0", "3*x0^2*x1/4" or
// "(x0 + x1)*(x0 - 2)", failing the test on a syntax error.
func parse(t testing.TB, s string) Poly {
	t.Helper()
	p, err := parsePoly(s)
	if err != nil {
		t.Fatalf("parse(%q): %v", s, err)
	}
	return p
}

// frac reads num/den with parse and returns it in canonical form.
func frac(t testing.TB, num, den string) Frac {
	t.Helper()
	f, err := NewFrac(parse(t, num), parse(t, den))
	if err != nil {
		t.Fatalf("NewFrac(%s, %s): %v", num, den, err)
	}
	return f
}

// parsePoly parses s; see parse.
func parsePoly(s string) (Poly, error) {
	ps := &parser{s: s}
	p := ps.expr()
	if ps.skipSpace(); ps.err == nil && ps.i < len(s) {
		ps.fail("unexpected %q", s[ps.i:])
	}
	return p, ps.err
}

// parser is a recursive-descent parser over s for parsePoly.
type parser struct {
	s   string
	i   int
	err error
}

func (ps *parser) fail(format string, args ...any) {
	if ps.err == nil {
		ps.err = fmt.Errorf("at %d: "+format, append([]any{ps.i}, args...)...)
	}
}

func (ps *parser) skipSpace() {
	for ps.i < len(ps.s) && ps.s[ps.i] == ' ' {
		ps.i++
	}
}

// peek skips blanks and returns the next byte, or 0 at the end.
func (ps *parser) peek() byte {
	if ps.skipSpace(); ps.i < len(ps.s) {
		return ps.s[ps.i]
	}
	return 0
}

// expr := term {("+" | "-") term}
func (ps *parser) expr() Poly {
	p := ps.term()
	for c := ps.peek(); (c == '+' || c == '-') && ps.err == nil; c = ps.peek() {
		ps.i++
		if q := ps.term(); c == '+' {
			p = p.Add(q)
		} else {
			p = p.Sub(q)
		}
	}
	return p
}

// term := factor {("*" factor | "/" int)}
func (ps *parser) term() Poly {
	p := ps.factor()
	for c := ps.peek(); (c == '*' || c == '/') && ps.err == nil; c = ps.peek() {
		ps.i++
		if c == '*' {
			p = p.Mul(ps.factor())
		} else {
			p = p.Scale(big.NewRat(1, int64(ps.int())))
		}
	}
	return p
}

// factor := "-" factor | atom ["^" int]
func (ps *parser) factor() Poly {
	if ps.peek() == '-' {
		ps.i++
		return ps.factor().Neg()
	}
	p := ps.atom()
	if ps.peek() == '^' {
		ps.i++
		p = p.Pow(ps.int())
	}
	return p
}

// atom := int | "x" int | "(" expr ")"
func (ps *parser) atom() Poly {
	switch c := ps.peek(); {
	case c == 'x':
		ps.i++
		return Var(ps.int())
	case c == '(':
		ps.i++
		p := ps.expr()
		if ps.peek() != ')' {
			ps.fail("want )")
		}
		ps.i++
		return p
	case c >= '0' && c <= '9':
		return Int(int64(ps.int()))
	}
	ps.fail("unexpected input")
	return Poly{}
}

// int reads a decimal integer.
func (ps *parser) int() int {
	ps.skipSpace()
	j := ps.i
	for j < len(ps.s) && unicode.IsDigit(rune(ps.s[j])) {
		j++
	}
	n, err := strconv.Atoi(ps.s[ps.i:j])
	if err != nil {
		ps.fail("want an integer")
	}
	ps.i = j
	return n
}

// r returns the rational a/b.
func r(a, b int64) *big.Rat { return big.NewRat(a, b) }

// point returns the rationals vs[0]/vs[1], vs[2]/vs[3], ...
func point(vs ...int64) []*big.Rat {
	x := make([]*big.Rat, len(vs)/2)
	for i := range x {
		x[i] = r(vs[2*i], vs[2*i+1])
	}
	return x
}

// fracs returns the polynomials of ss as rational functions.
func fracs(t testing.TB, ss ...string) []Frac {
	fs := make([]Frac, len(ss))
	for i, s := range ss {
		fs[i] = FracOf(parse(t, s))
	}
	return fs
}

// matrix returns the rows of polynomials as a matrix of rational functions.
func matrix(t testing.TB, rows ...[]string) [][]Frac {
	m := make([][]Frac, len(rows))
	for i, row := range rows {
		m[i] = fracs(t, row...)
	}
	return m
}
