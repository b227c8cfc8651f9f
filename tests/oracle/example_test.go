package oracle_test

import (
	"fmt"

	"github.com/fibergen/fibergen/tests/oracle"
)

// FiBeR's first step from zero state: g̃_0 = ω g, so m̂_0 = ω g and
// v̂_0 = (ω g)², and the corrected step is η ω g / √(ω² g² − A(ω) σ_w²).
func ExampleFiBeR() {
	o := oracle.NewFiBeR(oracle.DefaultFiBeR(), 2)
	theta := []float64{1, 1}
	o.Step(theta, []float64{0.5, -2}, 0.1)
	fmt.Printf("A(0.9) = %.4f\n", oracle.Attenuation(0.9))
	fmt.Printf("theta = %.6f\n", theta)
	fmt.Printf("g̃ = %.2f, t = %d\n", o.G, o.T)
	// Output:
	// A(0.9) = 0.8462
	// theta = [0.998689 1.001013]
	// g̃ = [0.45 -1.80], t = 1
}

// The finite-time attenuation of FiBeR's innovation filter starts at ω²
// (g̃_0 = ω w_0) and increases to A(ω) (Appendix D).
func ExampleFiniteAttenuation() {
	for _, t := range []int{0, 1, 2, 5} {
		fmt.Printf("A_%d = %.4f\n", t, oracle.FiniteAttenuation(0.9, t))
	}
	fmt.Printf("A = %.4f\n", oracle.Attenuation(0.9))
	// Output:
	// A_0 = 0.8100
	// A_1 = 0.8424
	// A_2 = 0.8453
	// A_5 = 0.8462
	// A = 0.8462
}

// DOPPLER's default low-pass (a double pole at 1/2, a zero at −1, unit DC
// gain) keeps a sixth of the variance of white noise.
func ExampleDopplerAttenuation() {
	h := oracle.DefaultDoppler()
	fmt.Printf("DC gain %.4f\n", (h.B0+h.B1)/(1+h.A1+h.A2))
	fmt.Printf("A = %.4f\n", oracle.DopplerAttenuation(h.B0, h.B1, h.A1, h.A2))
	// Output:
	// DC gain 1.0000
	// A = 0.1667
}
