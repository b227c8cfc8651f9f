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
