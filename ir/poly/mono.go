package poly

import (
	"fmt"
	"strings"
)

// A mono is the monomial Π x_i^e_i, stored as a string of big-endian uint16
// exponents, two bytes per variable with x0 first, trailing zero exponents
// trimmed. Monos are comparable and serve as map keys, and comparing two of
// them byte-wise compares their exponent vectors lexicographically.
type mono string

// maxExp is the largest exponent a mono holds.
const maxExp = 1<<16 - 1

// monoOf returns the monomial with exponent vector e.
func monoOf(e []int) mono {
	n := len(e)
	for n > 0 && e[n-1] == 0 {
		n--
	}
	var b strings.Builder
	b.Grow(2 * n)
	for _, k := range e[:n] {
		checkExp(k)
		b.WriteByte(byte(k >> 8))
		b.WriteByte(byte(k))
	}
	return mono(b.String())
}

// monoVarPow returns x_i^k.
func monoVarPow(i, k int) mono {
	if i < 0 {
		panic(fmt.Sprintf("poly: negative variable index %d", i))
	}
	e := make([]int, i+1)
	e[i] = k
	return monoOf(e)
}

// checkExp panics if k does not fit a mono's exponent.
func checkExp(k int) {
	if k < 0 || k > maxExp {
		panic(fmt.Sprintf("poly: exponent %d out of range [0, %d]", k, maxExp))
	}
}

// nvars returns one more than the index of the last variable of m.
func (m mono) nvars() int { return len(m) / 2 }

// exp returns the exponent of x_i in m.
func (m mono) exp(i int) int {
	if 2*i >= len(m) {
		return 0
	}
	return int(m[2*i])<<8 | int(m[2*i+1])
}

// degree returns the total degree of m.
func (m mono) degree() int {
	d := 0
	for i := range m.nvars() {
		d += m.exp(i)
	}
	return d
}

// exps returns the exponent vector of m, nil for the constant monomial.
func (m mono) exps() []int {
	if m == "" {
		return nil
	}
	e := make([]int, m.nvars())
	for i := range e {
		e[i] = m.exp(i)
	}
	return e
}

// appendMul appends the encoding of m*n to buf.
func appendMul(buf []byte, m, n mono) []byte {
	if len(m) < len(n) {
		m, n = n, m
	}
	for i := range m.nvars() {
		k := m.exp(i) + n.exp(i)
		checkExp(k)
		buf = append(buf, byte(k>>8), byte(k))
	}
	return buf
}

// mul returns m*n.
func (m mono) mul(n mono) mono {
	switch {
	case n == "":
		return m
	case m == "":
		return n
	}
	return mono(appendMul(make([]byte, 0, max(len(m), len(n))), m, n))
}

// div returns m/n and whether n divides m.
func (m mono) div(n mono) (mono, bool) {
	if len(n) > len(m) {
		return "", false
	}
	if n == "" {
		return m, true
	}
	e := m.exps()
	for i := range n.nvars() {
		e[i] -= n.exp(i)
		if e[i] < 0 {
			return "", false
		}
	}
	return monoOf(e), true
}

// without returns m with the exponent of x_v set to zero.
func (m mono) without(v int) mono {
	if m.exp(v) == 0 {
		return m
	}
	e := m.exps()
	e[v] = 0
	return monoOf(e)
}
