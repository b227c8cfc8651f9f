package corrnoise

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The noise block the designer writes (w = z + Σ ω̂_i s_i with the old
// buffers, then s_i = θ̂_i s_i + z) has the impulse response of the BLT's
// coefficients.
func TestBLTCoefficientsAreTheBufferRecursion(t *testing.T) {
	b := BLT{Decay: []float64{0.97, 0.52}, Weight: []float64{-0.61, -0.25}}
	n := 12
	s := make([]float64, b.Buffers())
	got := make([]float64, n)
	for step := range n {
		z := b2f(step == 0) // the impulse
		w := z
		for i := range s {
			w += b.Weight[i] * s[i]
		}
		for i := range s {
			s[i] = b.Decay[i]*s[i] + z
		}
		got[step] = w
	}
	if d := cmp.Diff(b.Coefficients(n), got, cmpopts.EquateApprox(1e-14, 0)); d != "" {
		t.Errorf("coefficients against the recursion (-want +got):\n%s", d)
	}
}

// PairFromDecays gives inverse series; Inverse of either side returns the
// other; interlaced decays give positive strategy weights and negative
// noise weights.
func TestPairRoundTrip(t *testing.T) {
	for _, c := range []struct{ theta, thetaHat []float64 }{
		{[]float64{0.8}, []float64{0.3}},
		{[]float64{0.99, 0.7}, []float64{0.9, 0.2}},
		{[]float64{0.9995, 0.993, 0.91, 0.31}, []float64{0.9999 * 0.99995, 0.987, 0.86, 0.25}[:4]},
	} {
		strategy, noise, err := PairFromDecays(c.theta, c.thetaHat)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		n := 50
		if d := cmp.Diff(append([]float64{1}, make([]float64, n-1)...), Multiply(strategy.Coefficients(n), noise.Coefficients(n), n), cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("%v: C·C⁻¹ is not I (-want +got):\n%s", c, d)
		}
		checkInverse(t, strategy, noise)
		checkInverse(t, noise, strategy)
	}
}

// checkInverse checks that a.Inverse() is b.
func checkInverse(t *testing.T, a, b BLT) {
	t.Helper()
	got, err := a.Inverse()
	if err != nil {
		t.Fatalf("%v.Inverse(): %v", a, err)
	}
	if d := cmp.Diff(b, got, cmpopts.EquateApprox(1e-8, 1e-10)); d != "" {
		t.Errorf("%v.Inverse() (-want +got):\n%s", a, d)
	}
}

func TestBLTErrors(t *testing.T) {
	for _, c := range []struct {
		b   BLT
		msg string
	}{
		{BLT{Decay: []float64{0.5}, Weight: nil}, "a weight per decay, got 1 decays and 0 weights"},
		{BLT{Decay: []float64{1}, Weight: []float64{0.1}}, "decay 1 is 1, want it in (0, 1)"},
		{BLT{Decay: []float64{0.5, -0.1}, Weight: []float64{0.1, 0.1}}, "decay 2 is -0.1"},
		{BLT{Decay: []float64{0.5}, Weight: []float64{0}}, "weight 1 is 0"},
		{BLT{Decay: []float64{0.5, 0.4}, Weight: []float64{0.5, -0.5}}, "complex decay"},
		{BLT{Decay: []float64{0.5}, Weight: []float64{0.6}}, "the inverse of the BLT: decay 1 is -0.09999"}, // 1 + 0.6/(y − 0.5) = 0 at y = −0.1
		{BLT{Decay: []float64{0.5}, Weight: []float64{-0.6}}, "the inverse of the BLT: decay 1 is 1.1"},     // and at 1.1 for −0.6
	} {
		if _, err := c.b.Inverse(); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v.Inverse(): got %v, want %q", c.b, err, c.msg)
		}
	}
	if _, _, err := PairFromDecays([]float64{0.5, 0.5}, []float64{0.2, 0.1}); err == nil || !strings.Contains(err.Error(), "coincide") {
		t.Errorf("PairFromDecays with equal decays: got %v", err)
	}
}
