package gain_test

import (
	"math"
	"testing"

	"github.com/fibergen/fibergen/gain"
)

// TestSpectralRadius checks SpectralRadius on matrices with known spectra.
func TestSpectralRadius(t *testing.T) {
	c, s := math.Cos(0.7), math.Sin(0.7)
	tests := []struct {
		name   string
		m      []float64
		k      int
		want   float64 // NaN: only check !(ρ < 1)
		stable bool
	}{
		{"zero", []float64{0, 0, 0, 0}, 2, 0, true},
		{"1x1", []float64{-0.7}, 1, 0.7, true},
		{"1x1 unstable", []float64{-1.2}, 1, 1.2, false},
		{"diagonal", []float64{0.5, 0, 0, -0.8}, 2, 0.8, true},
		{"diagonal 3", []float64{0.1, 0, 0, 0, 0.99, 0, 0, 0, -0.3}, 3, 0.99, true},
		{"rotation by pi/2 scaled by 0.5", []float64{0, -0.5, 0.5, 0}, 2, 0.5, true},
		{"rotation by 0.7 scaled by 0.5", []float64{0.5 * c, -0.5 * s, 0.5 * s, 0.5 * c}, 2, 0.5, true},
		{"rotation by pi/2", []float64{0, -1, 1, 0}, 2, 1, false},
		// cos(0.7)² + sin(0.7)² < 1 in float64, exactly: ρ is 1 - 5.6e-17.
		{"rotation by 0.7, rounded inward", []float64{c, -s, s, c}, 2, 1, true},
		{"identity", []float64{1, 0, 0, 1}, 2, 1, false},
		{"jordan block at 1", []float64{1, 1, 0, 1}, 2, math.NaN(), false},
		{"jordan block at 0.9", []float64{0.9, 1, 0, 0.9}, 2, 0.9, true},
		{"jordan block 3 at -0.5", []float64{-0.5, 1, 0, 0, -0.5, 1, 0, 0, -0.5}, 3, 0.5, true},
		{"nilpotent", []float64{0, 1, 0, 0}, 2, 0, true},
		{"triangular", []float64{0.25, 5, 0, 0.5}, 2, 0.5, true},
		{"projection: eigenvalue 1, max norm 0.5", []float64{0.5, 0.5, 0.5, 0.5}, 2, 1, false},
		{"nilpotent 3", []float64{0, 1, 1, 0, 0, 1, 0, 0, 0}, 3, 0, true},
		{"fiber omega=1", []float64{0, 0, -1, 0}, 2, 0, true},
		{"fiber omega=0.5", []float64{0.5, 0.5, -0.5, 0.5}, 2, math.Sqrt(0.5), true},
		{"large entries", []float64{1e200, 0, 0, 1e100}, 2, 1e200, false},
		{"tiny entries", []float64{1e-200, 0, 0, 1e-300}, 2, 1e-200, true},
		{"NaN entry", []float64{0.5, math.NaN(), 0, 0.5}, 2, math.NaN(), false},
		{"Inf entry", []float64{0.5, math.Inf(-1), 0, 0.5}, 2, math.NaN(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := append([]float64(nil), tt.m...)
			rho := gain.SpectralRadius(m, tt.k)
			if got := rho < 1; got != tt.stable {
				t.Errorf("SpectralRadius = %v; stable %v, want %v", rho, got, tt.stable)
			}
			if !math.IsNaN(tt.want) && relErr(rho, tt.want) > 1e-12 && math.Abs(rho-tt.want) > 1e-300 {
				t.Errorf("SpectralRadius = %.17g, want %.17g", rho, tt.want)
			}
			for i := range m {
				if math.Float64bits(m[i]) != math.Float64bits(tt.m[i]) {
					t.Fatalf("SpectralRadius changed its argument: %v", m)
				}
			}
		})
	}
	// FiBeR's M: ρ = sqrt(1 - ω) for 0 < ω ≤ 1 (complex pair), the larger
	// root of λ² − 2(1−ω)λ + (1−ω) in modulus beyond.
	for _, w := range []float64{0.01, 0.3, 0.9, 0.99, 1.1, 1.3, 1.33} {
		m := []float64{1 - w, 1 - w, -w, 1 - w}
		q := 1 - w
		var want float64
		if d := q*q - q; d < 0 {
			want = math.Sqrt(q)
		} else {
			want = math.Max(math.Abs(q+math.Sqrt(d)), math.Abs(q-math.Sqrt(d)))
		}
		if rho := gain.SpectralRadius(m, 2); relErr(rho, want) > 1e-12 {
			t.Errorf("FiBeR M at omega=%v: SpectralRadius %.17g, want %.17g", w, rho, want)
		}
	}
}

// TestSpectralRadiusRepeatedPoles checks SpectralRadius on companion
// matrices of repeated real poles (the form of a second- or third-order
// IIR filter with a critically damped pole, optimizers/doppler.dsl), whose
// Jordan blocks rounding splits: the estimate must lie at or above ρ, within
// the accuracy SpectralRadius documents, and powers of two, where the
// squarings cancel exactly, must not collapse to 0.
func TestSpectralRadiusRepeatedPoles(t *testing.T) {
	for _, p := range []float64{0.5, -0.5, 0.25, 0.125, 0.75, 0.9375, 1, 1.5, 2, -2, 3} {
		for _, c := range []struct {
			name string
			m    []float64
			tol  float64
		}{
			{"double", []float64{2 * p, -p * p, 1, 0}, 1e-5},
			{"triple", []float64{3 * p, -3 * p * p, p * p * p, 1, 0, 0, 0, 1, 0}, 1e-2},
		} {
			k := 2
			if len(c.m) == 9 {
				k = 3
			}
			rho, want := gain.SpectralRadius(c.m, k), math.Abs(p)
			if rho < want*(1-1e-12) || rho > want*(1+c.tol) {
				t.Errorf("%s pole at %v: SpectralRadius %.17g, want %v within a relative %v above", c.name, p, rho, want, c.tol)
			}
			if (rho < 1) != (want < 1) {
				t.Errorf("%s pole at %v: SpectralRadius %.17g gives stable = %v", c.name, p, rho, rho < 1)
			}
		}
	}
}

// relErr is |got − want| / |want|.
func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }
