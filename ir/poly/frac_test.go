package poly

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestNewFracCanonical(t *testing.T) {
	tests := []struct {
		num, den string
		wantNum  string
		wantDen  string
	}{
		{"0", "x0 + 3", "0", "1"},
		{"2*x0", "4", "x0", "2"},
		{"x0 - 2", "3*x0 - 4", "2 - x0", "4 - 3*x0"},
		{"x0^2 - 1", "x0 - 1", "1 + x0", "1"},
		{"x0/2", "x0/3", "3", "2"},
		{"6*x0 + 4", "-2", "-2 - 3*x0", "1"},
		{"1", "-x0 - 1", "-1", "1 + x0"},
		{"x0/2 + 1/3", "x1/4", "4 + 6*x0", "3*x1"},
		{"(x0 + x1)*(x0 - 2)", "(x0 + x1)*(x1 + 3)", "-2 + x0", "3 + x1"},
		{"(x0 + x1)*(x0 - 2)", "-(x0 + x1)*(x1 + 3)*x1", "2 - x0", "3*x1 + x1^2"},
		{"2*x0*x1", "4*x0^2*x1 - 6*x0", "-x1", "3 - 2*x0*x1"},
	}
	for _, tt := range tests {
		f := frac(t, tt.num, tt.den)
		if f.Num.String() != tt.wantNum || f.Den.String() != tt.wantDen {
			t.Errorf("NewFrac(%s, %s) = %s / %s, want %s / %s", tt.num, tt.den, f.Num, f.Den, tt.wantNum, tt.wantDen)
		}
	}
	if _, err := NewFrac(Int(1), Poly{}); !errors.Is(err, ErrZeroDenominator) {
		t.Errorf("NewFrac(1, 0): %v, want ErrZeroDenominator", err)
	}
}

func TestFracArithmetic(t *testing.T) {
	w := FracOf(Var(0))
	one := FracOf(Int(1))
	tests := []struct {
		name string
		got  Frac
		want string
	}{
		{"of poly", FracOf(parse(t, "x0/2 + 1/3")), "(2 + 3*x0)/6"},
		{"zero value", Frac{}, "0"},
		{"zero value plus one", Frac{}.Add(one), "1"},
		{"add", frac(t, "1", "x0").Add(frac(t, "1", "x1")), "(x0 + x1)/(x0*x1)"},
		{"add common factor", frac(t, "1", "x0*(x0 + 1)").Add(frac(t, "1", "x0*(x0 - 1)")), "-2/(1 - x0^2)"},
		{"add cancels through", frac(t, "1", "x0 - 1").Sub(frac(t, "1", "x0 + 1")), "-2/(1 - x0^2)"},
		{"add to zero", frac(t, "x1", "x0 + 2").Add(frac(t, "-x1", "x0 + 2")), "0"},
		{"add shared den", frac(t, "x0", "x0^2 - 1").Add(frac(t, "1", "x0^2 - 1")), "-1/(1 - x0)"},
		{"add poly", frac(t, "1", "2*x0").Add(w), "(1 + 2*x0^2)/(2*x0)"},
		{"add integer content", frac(t, "1", "2").Add(frac(t, "1", "2")), "1"},
		{"mul", frac(t, "x0 - 1", "x1").Mul(frac(t, "x1^2", "x0^2 - 1")), "x1/(1 + x0)"},
		{"mul contents", frac(t, "1", "2").Mul(FracOf(Int(2))), "1"},
		{"mul by zero", frac(t, "x0", "x1").Mul(Frac{}), "0"},
		{"neg", frac(t, "2 - x0", "4 - 3*x0").Neg(), "(-2 + x0)/(4 - 3*x0)"},
		{"sub", one.Sub(w).Mul(one.Sub(w)), "1 - 2*x0 + x0^2"},
		{"div", mustDiv(t, frac(t, "x0", "x0 + 1"), frac(t, "x0^2", "x0^2 - 1")), "(-1 + x0)/x0"},
		{"div sign", mustDiv(t, one, FracOf(parse(t, "-2*x0"))), "-1/(2*x0)"},
		{"fiber gain", frac(t, "x0 - 2", "3*x0 - 4"), "(2 - x0)/(4 - 3*x0)"},
	}
	for _, tt := range tests {
		if s := tt.got.String(); s != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, s, tt.want)
		}
	}
	if _, err := one.Div(Frac{}); !errors.Is(err, ErrZeroDenominator) {
		t.Errorf("1/0: %v, want ErrZeroDenominator", err)
	}
}

// mustDiv returns a/b, failing the test on an error.
func mustDiv(t *testing.T, a, b Frac) Frac {
	t.Helper()
	q, err := a.Div(b)
	if err != nil {
		t.Fatalf("(%s).Div(%s): %v", a, b, err)
	}
	return q
}

func TestFracEqualAndEval(t *testing.T) {
	a := frac(t, "x0^2 - 1", "2*x0 - 2")
	b := frac(t, "x0 + 1", "2")
	if !a.Equal(b) || a.Equal(b.Add(FracOf(Int(1)))) {
		t.Errorf("Equal(%s, %s) is wrong", a, b)
	}
	if !(Frac{}).Equal(FracOf(Poly{})) {
		t.Errorf("the zero value is not equal to 0/1")
	}
	if n := a.NumTerms(); n != 3 {
		t.Errorf("(%s).NumTerms() = %d, want 3", a, n)
	}
	v, err := frac(t, "2 - x0", "4 - 3*x0").Eval(point(1, 2))
	if err != nil || v.Cmp(r(3, 5)) != 0 {
		t.Errorf("Eval at 1/2 = %v, %v, want 3/5", v, err)
	}
	if _, err := frac(t, "2 - x0", "4 - 3*x0").Eval(point(4, 3)); !errors.Is(err, ErrZeroDenominator) {
		t.Errorf("Eval at the pole: %v, want ErrZeroDenominator", err)
	}
}

// TestFracRandom checks field identities on random rational functions, and
// that Eval is a homomorphism for them.
func TestFracRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := point(2, 7, -3, 5, 5, 3)
	for i := range 100 {
		var fs [3]Frac
		for j := range fs {
			den := randPoly(rng, 3, 3, 2)
			for den.IsZero() || den.Eval(x).Sign() == 0 {
				den = randPoly(rng, 3, 3, 2)
			}
			fs[j], _ = NewFrac(randPoly(rng, 3, 4, 2).Mul(den.Pow(j)), den.Mul(randPoly(rng, 3, 2, 1).Add(Int(9))))
		}
		a, b, c := fs[0], fs[1], fs[2]
		if !a.Mul(b.Add(c)).Equal(a.Mul(b).Add(a.Mul(c))) {
			t.Fatalf("%d: distributivity fails for %s, %s, %s", i, a, b, c)
		}
		if !a.Add(b).Sub(b).Equal(a) {
			t.Fatalf("%d: (%s + %s) - %s != %s", i, a, b, b, a)
		}
		if !b.IsZero() {
			if q := mustDiv(t, a.Mul(b), b); !q.Equal(a) {
				t.Fatalf("%d: (%s)(%s)/(%s) = %s", i, a, b, b, q)
			}
		}
		for _, f := range []Frac{a.Add(b), a.Mul(c), b.Sub(c)} {
			checkCanonical(t, f)
		}
		av, _ := a.Eval(x)
		bv, _ := b.Eval(x)
		sum, err := a.Add(b).Eval(x)
		if want := new(big.Rat).Add(av, bv); err == nil && sum.Cmp(want) != 0 {
			t.Fatalf("%d: (%s + %s) at x = %v, want %v", i, a, b, sum, want)
		}
	}
}

// checkCanonical fails the test unless f is in canonical form.
func checkCanonical(t *testing.T, f Frac) {
	t.Helper()
	if f.IsZero() {
		if !f.Den.isOne() {
			t.Fatalf("zero is %s, want 0/1", f)
		}
		return
	}
	g := new(big.Int)
	for _, p := range []Poly{f.Num, f.Den} {
		if p.den != nil {
			t.Fatalf("%s: %s has a non-integer coefficient", f, p)
		}
		for _, x := range p.t {
			g.GCD(nil, nil, g, x.c)
		}
	}
	if g.Cmp(bigOne) != 0 {
		t.Fatalf("%s: the coefficients have the common factor %v", f, g)
	}
	if f.Den.t[0].c.Sign() <= 0 {
		t.Fatalf("%s: the first term of the denominator is negative", f)
	}
	if g := GCD(f.Num, f.Den); !g.isOne() {
		t.Fatalf("%s: numerator and denominator have the common factor %s", f, g)
	}
}
