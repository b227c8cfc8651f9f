package poly

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArithmetic(t *testing.T) {
	tests := []struct {
		name string
		got  Poly
		want string
	}{
		{"zero value", Poly{}, "0"},
		{"int", Int(-7), "-7"},
		{"const", Const(r(-6, 4)), "-3/2"},
		{"var", Var(3), "x3"},
		{"add", parse(t, "x0 + 1").Add(parse(t, "x1 - 1")), "x0 + x1"},
		{"add cancels", parse(t, "x0 + x1").Add(parse(t, "-x0 - x1")), "0"},
		{"sub", parse(t, "4").Sub(parse(t, "3*x0")), "4 - 3*x0"},
		{"sub self", parse(t, "x0^2/3 + x1").Sub(parse(t, "x0^2/3 + x1")), "0"},
		{"mul", parse(t, "x0 + x1").Mul(parse(t, "x0 - x1")), "x0^2 - x1^2"},
		{"mul rational", parse(t, "x0/2 + 1/3").Mul(parse(t, "6")), "2 + 3*x0"},
		{"mul by zero", parse(t, "x0 + 1").Mul(Poly{}), "0"},
		{"neg", parse(t, "2 - x0").Neg(), "-2 + x0"},
		{"scale", parse(t, "2 + 4*x1").Scale(r(3, 4)), "3/2 + 3*x1"},
		{"scale to integer", parse(t, "x0/2 + 1/6").Scale(r(6, 1)), "1 + 3*x0"},
		{"scale by zero", parse(t, "x0").Scale(new(big.Rat)), "0"},
		{"pow 0", parse(t, "x0 + 1").Pow(0), "1"},
		{"pow 3", parse(t, "x0 + 1").Pow(3), "1 + 3*x0 + 3*x0^2 + x0^3"},
		{"pow 2 of 2 vars", parse(t, "x0 - x1").Pow(2), "x0^2 - 2*x0*x1 + x1^2"},
		{"print order", parse(t, "x1^2 + x0*x1 + x0^2 + x1 + x0 + 1"), "1 + x0 + x1 + x0^2 + x0*x1 + x1^2"},
		{"print order of degree 3", parse(t, "x2^3 + x0*x1*x2 + x0^3 + x1^2*x0"), "x0^3 + x0*x1^2 + x0*x1*x2 + x2^3"},
		{"rational coefficients", parse(t, "x0/2 - 1/3 - 5*x0^2*x1/4"), "-1/3 + x0/2 - 5*x0^2*x1/4"},
	}
	for _, tt := range tests {
		if s := tt.got.String(); s != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, s, tt.want)
		}
	}
}

func TestTerms(t *testing.T) {
	got := parse(t, "4 - 3*x0 + x2^2/2 + x0*x2").Terms()
	want := []Term{
		{r(4, 1), nil},
		{r(-3, 1), []int{1}},
		{r(1, 1), []int{1, 0, 1}},
		{r(1, 2), []int{0, 0, 2}},
	}
	ratEqual := cmp.Comparer(func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, got, ratEqual); diff != "" {
		t.Errorf("Terms (-want +got):\n%s", diff)
	}
}

func TestQueries(t *testing.T) {
	tests := []struct {
		in       string
		terms    int
		degree   int
		vars     []int
		constant *big.Rat
	}{
		{"0", 0, -1, nil, r(0, 1)},
		{"5/3", 1, 0, nil, r(5, 3)},
		{"2 - x0", 2, 1, []int{0}, nil},
		{"3*x0^2*x1 + x4", 2, 3, []int{0, 1, 4}, nil},
		{"x2*x2 - x2^2 + 1", 1, 0, nil, r(1, 1)},
	}
	for _, tt := range tests {
		p := parse(t, tt.in)
		if n := p.NumTerms(); n != tt.terms {
			t.Errorf("(%s).NumTerms() = %d, want %d", tt.in, n, tt.terms)
		}
		if d := p.Degree(); d != tt.degree {
			t.Errorf("(%s).Degree() = %d, want %d", tt.in, d, tt.degree)
		}
		if diff := cmp.Diff(tt.vars, p.Vars()); diff != "" {
			t.Errorf("(%s).Vars() (-want +got):\n%s", tt.in, diff)
		}
		c, ok := p.Constant()
		if ok != (tt.constant != nil) || ok && c.Cmp(tt.constant) != 0 {
			t.Errorf("(%s).Constant() = %v, %v, want %v", tt.in, c, ok, tt.constant)
		}
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"0", "x0 - x0", true},
		{"(x0 + 1)^2", "x0^2 + 2*x0 + 1", true},
		{"x0/2", "x0", false},
		{"x0/2", "2*x0/4", true},
		{"x0", "x1", false},
		{"x0 + 1", "x0", false},
		{"1/2", "1/3", false},
	}
	for _, tt := range tests {
		if got := parse(t, tt.a).Equal(parse(t, tt.b)); got != tt.want {
			t.Errorf("(%s).Equal(%s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestEval(t *testing.T) {
	tests := []struct {
		p    string
		x    []*big.Rat
		want *big.Rat
	}{
		{"0", nil, r(0, 1)},
		{"7/2", nil, r(7, 2)},
		{"2 - x0", point(1, 2), r(3, 2)},
		{"(2 - x0)/3 + x1^2*x0", point(1, 2, -2, 3, 5, 7), r(13, 18)},
		{"3*x0^2*x1 - x2/4", point(2, 3, 3, 1, 1, 1), r(15, 4)},
	}
	for _, tt := range tests {
		if got := parse(t, tt.p).Eval(tt.x); got.Cmp(tt.want) != 0 {
			t.Errorf("(%s).Eval(%v) = %v, want %v", tt.p, tt.x, got, tt.want)
		}
	}
}

func TestDivExact(t *testing.T) {
	tests := []struct {
		p, q string
		want string // "" if q does not divide p
	}{
		{"x0^2 - 1", "x0 - 1", "1 + x0"},
		{"x0^2 - 1", "x0 + 2", ""},
		{"x0^2 - 1", "2*x0 - 2", "1/2 + x0/2"},
		{"(x0 + x1)*(x0 - 2)*(x1 + 3)", "(x0 + x1)*(x1 + 3)", "-2 + x0"},
		{"(x0 + x1)*(x0 - 2)", "x1 + 3", ""},
		{"x0^3*x1^2", "x0*x1^2", "x0^2"},
		{"x0^3*x1^2", "x1^3", ""},
		{"x0^2/3", "4", "x0^2/12"},
		{"0", "x0 + 1", "0"},
		{"x0", "0", ""},
		{"(x0^2 + x1*x2 - 1/2)*(x2^3 - x0*x1 + 2)", "x2^3 - x0*x1 + 2", "-1/2 + x0^2 + x1*x2"},
		{"(x0^2 + x1*x2 - 1/2)*(x2^3 - x0*x1 + 2) + 1", "x2^3 - x0*x1 + 2", ""},
		{"(x0^2 + x1*x2 - 1/2)*(x2^3 - x0*x1 + 2) + x0^9", "x2^3 - x0*x1 + 2", ""},
	}
	for _, tt := range tests {
		got, ok := parse(t, tt.p).DivExact(parse(t, tt.q))
		switch {
		case tt.want == "" && ok:
			t.Errorf("(%s).DivExact(%s) = %s, want no quotient", tt.p, tt.q, got)
		case tt.want != "" && (!ok || got.String() != tt.want):
			t.Errorf("(%s).DivExact(%s) = %s, %v, want %s", tt.p, tt.q, got, ok, tt.want)
		}
	}
}

func TestGCD(t *testing.T) {
	tests := []struct {
		p, q, want string
	}{
		{"0", "0", "0"},
		{"0", "-2*x0 + 4", "2 - x0"},
		{"3", "5", "1"},
		{"6", "x0 + 1", "1"},
		{"x0^2 - 1", "x0^2 - 2*x0 + 1", "1 - x0"},
		{"x0^2 - 1", "x0^2 + 1", "1"},
		{"2*x0 - 4", "3*x0^2 - 12", "2 - x0"},
		{"x0^2/2 - 1/2", "x0/3 + 1/3", "1 + x0"},
		{"(x0 + x1)*(x0 - 2)", "(x0 + x1)*(x1 + 3)", "x0 + x1"},
		{"(x0 + x1)^2*(x0 - 2)", "(x0 + x1)*(x1 + 3)*(x0 - 2)", "2*x0 + 2*x1 - x0^2 - x0*x1"},
		{"x0*x1", "x0*x2", "x0"},
		{"x0^3*x1^2", "x0^2*x1^5", "x0^2*x1^2"},
		{"(1 + x0*x1 + x2^2)*(x0 - x2)^2", "(1 + x0*x1 + x2^2)*(x1 + x2)*(x0 - x2)", "x0 - x2 + x0^2*x1 - x0*x1*x2 + x0*x2^2 - x2^3"},
		{"(x0 - x1)*(x1 - x2)*(x2 - x3)", "(x1 - x2)*(x2 - x3)*(x3 - x0)", "x1*x2 - x1*x3 - x2^2 + x2*x3"},
		{"x1", "x0", "1"},
		{"x0 + x1", "x0 - x1", "1"},
	}
	for _, tt := range tests {
		p, q := parse(t, tt.p), parse(t, tt.q)
		if g := GCD(p, q); g.String() != tt.want {
			t.Errorf("GCD(%s, %s) = %s, want %s", tt.p, tt.q, g, tt.want)
		}
		if g := GCD(q, p); g.String() != tt.want {
			t.Errorf("GCD(%s, %s) = %s, want %s", tt.q, tt.p, g, tt.want)
		}
		if g := (gcdFinder{}).gcd(p, q); g.String() != tt.want {
			t.Errorf("remainder sequence gcd(%s, %s) = %s, want %s", tt.p, tt.q, g, tt.want)
		}
	}
}

// TestGCDMethods checks that the heuristic gcd and the remainder sequence
// agree on random polynomials with a random common factor.
func TestGCDMethods(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	huge := Const(new(big.Rat).SetFrac64(1<<62-1, 1)).Pow(8) // too large for the heuristic
	for i := range 300 {
		nvars := []int{1, 3, 6}[i%3]
		c := randPoly(rng, nvars, 3, 2)
		p := randPoly(rng, nvars, 4, 3).Mul(c)
		q := randPoly(rng, nvars, 4, 3).Mul(c)
		switch rng.IntN(4) {
		case 0:
			p = p.Mul(c)
		case 1:
			p = p.Add(huge.Mul(randPoly(rng, nvars, 2, 2)).Mul(c))
			q = q.Add(huge.Mul(randPoly(rng, nvars, 2, 2)).Mul(c))
		}
		heu, rs := gcdZ(p, q), (gcdFinder{}).gcd(p, q)
		if !heu.Equal(rs) {
			t.Fatalf("%d: gcd(%s, %s): heuristic %s, remainder sequence %s", i, p, q, heu, rs)
		}
	}
	// The heuristic gives up on coefficients this large, and GCD falls back.
	c := Var(0).Add(Const(new(big.Rat).SetInt(new(big.Int).Lsh(bigOne, heuMaxBits))))
	p, q := c.Mul(parse(t, "x0 + 1")), c.Mul(parse(t, "x0 - 1"))
	if _, ok := heuGCD(p, q); ok {
		t.Errorf("heuGCD did not give up on %d-bit coefficients", heuMaxBits)
	}
	if g := GCD(p, q); !g.Equal(c) {
		t.Errorf("GCD(%s, %s) = %s, want %s", p, q, g, c)
	}
}

// randPoly returns a random polynomial in nvars variables with up to
// nterms terms of degree at most deg and small integer coefficients.
func randPoly(rng *rand.Rand, nvars, nterms, deg int) Poly {
	var p Poly
	for range 1 + rng.IntN(nterms) {
		m := Int(rng.Int64N(9) - 4)
		for range rng.IntN(deg + 1) {
			m = m.Mul(Var(rng.IntN(nvars)))
		}
		p = p.Add(m)
	}
	return p
}

// TestRandomIdentities checks ring identities, exact division and the gcd
// of random polynomials with a random common factor, and that evaluation is
// a homomorphism.
func TestRandomIdentities(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := point(1, 3, -2, 5, 7, 4, 3, 11)
	for i := range 200 {
		a, b, c := randPoly(rng, 4, 5, 3), randPoly(rng, 4, 5, 3), randPoly(rng, 4, 4, 2)
		ab, ac := a.Mul(b), a.Add(c)
		if got, want := ab.Eval(x), new(big.Rat).Mul(a.Eval(x), b.Eval(x)); got.Cmp(want) != 0 {
			t.Fatalf("%d: (%s)(%s) = %s evaluates to %v, want %v", i, a, b, ab, got, want)
		}
		if got, want := ac.Eval(x), new(big.Rat).Add(a.Eval(x), c.Eval(x)); got.Cmp(want) != 0 {
			t.Fatalf("%d: (%s)+(%s) = %s evaluates to %v, want %v", i, a, c, ac, got, want)
		}
		if !a.Mul(b.Add(c)).Equal(ab.Add(a.Mul(c))) || !ac.Sub(c).Equal(a) {
			t.Fatalf("%d: distributivity or subtraction fails for %s, %s, %s", i, a, b, c)
		}
		if c.IsZero() {
			continue
		}
		ca, cb := c.Mul(a), c.Mul(b)
		if q, ok := ca.DivExact(c); !ok || !q.Equal(a) {
			t.Fatalf("%d: (%s).DivExact(%s) = %s, %v, want %s", i, ca, c, q, ok, a)
		}
		g := GCD(ca, cb)
		if _, ok := g.DivExact(c); !ok && !a.IsZero() && !b.IsZero() {
			t.Fatalf("%d: GCD(%s, %s) = %s is not a multiple of %s", i, ca, cb, g, c)
		}
		if _, ok := ca.DivExact(g); !ok {
			t.Fatalf("%d: GCD(%s, %s) = %s does not divide %s", i, ca, cb, g, ca)
		}
		if _, ok := cb.DivExact(g); !ok {
			t.Fatalf("%d: GCD(%s, %s) = %s does not divide %s", i, ca, cb, g, cb)
		}
	}
}

func TestNoAliasing(t *testing.T) {
	c := r(3, 2)
	p := Const(c).Mul(Var(0))
	c.SetInt64(5)
	if p.String() != "3*x0/2" {
		t.Fatalf("Const aliases its argument: %s", p)
	}
	ts := p.Terms()
	ts[0].Coef.SetInt64(7)
	ts[0].Exp[0] = 9
	if p.String() != "3*x0/2" {
		t.Fatalf("Terms aliases the polynomial: %s", p)
	}
	q := p.Add(Int(1))
	_ = q.Neg().Mul(q).Scale(r(2, 1))
	if p.String() != "3*x0/2" || q.String() != "1 + 3*x0/2" {
		t.Fatalf("operations modified their operands: %s, %s", p, q)
	}
	k, _ := p.Mul(Int(0)).Add(Const(r(1, 3))).Constant()
	k.SetInt64(4)
	if p.String() != "3*x0/2" {
		t.Fatalf("Constant aliases: %s", p)
	}
}
