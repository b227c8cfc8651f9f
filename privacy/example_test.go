package privacy_test

import (
	"fmt"

	"github.com/fibergen/fibergen/privacy"
)

// Calibrate the noise of a run to ε = 3 and follow the ε it spends.
func Example() {
	s := privacy.Schedule{DatasetSize: 60000, BatchSize: 256, Epochs: 10, Sampling: privacy.Poisson}
	sigma, err := s.SigmaFor(3)
	if err != nil {
		fmt.Println(err)
		return
	}
	acct, err := s.Accountant(sigma)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d steps at q = %.5f, delta = %.3g\n", s.Steps(), s.SampleRate(), privacy.DefaultDelta(s.DatasetSize))
	fmt.Printf("sigma = %.4f\n", sigma)
	for _, t := range []int{s.Steps() / 10, s.Steps() / 2, s.Steps()} {
		g := acct.EpsilonAfter(t)
		fmt.Printf("after %4d steps: epsilon %.3f (order %v)\n", t, g.Epsilon, g.Order)
	}
	fmt.Printf("noise std on the mean gradient, clip norm 1: %.5f\n", s.NoiseStd(sigma, 1))
	// Output:
	// 2350 steps at q = 0.00427, delta = 5.55e-06
	// sigma = 0.7537
	// after  235 steps: epsilon 2.064 (order 6)
	// after 1175 steps: epsilon 2.556 (order 5.6)
	// after 2350 steps: epsilon 3.000 (order 5.4)
	// noise std on the mean gradient, clip norm 1: 0.00294
}

// Opacus' reference run: σ = 1.5, q = 0.04, 2250 steps, δ = 1e-5.
func ExamplePlan_Epsilon() {
	p := privacy.Plan{SampleRate: 0.04, Steps: 2250, Delta: 1e-5}
	g, err := p.Epsilon(1.5)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("epsilon %.6f at order %v\n", g.Epsilon, g.Order)
	// Output:
	// epsilon 7.329111 at order 3.9
}
