package privacy_test

import (
	"fmt"

	"github.com/fibergen/fibergen/privacy"
)

// Calibrate the noise of a run to ε = 3 and follow the ε it spends, by
// the default PLD accountant (RDP would ask for σ = 0.7537).
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
		fmt.Printf("after %4d steps: epsilon %.3f\n", t, acct.EpsilonAfter(t).Epsilon)
	}
	fmt.Printf("noise std on the mean gradient, clip norm 1: %.5f\n", s.NoiseStd(sigma, 1))
	// Output:
	// 2350 steps at q = 0.00427, delta = 5.55e-06
	// sigma = 0.7048
	// after  235 steps: epsilon 1.662
	// after 1175 steps: epsilon 2.410
	// after 2350 steps: epsilon 3.000
	// noise std on the mean gradient, clip norm 1: 0.00275
}

// Opacus' reference run, σ = 1.5, q = 0.04, 2250 steps, δ = 1e-5, by
// either accountant.
func ExamplePlan_Epsilon() {
	for _, a := range []privacy.Accounting{privacy.RDP, privacy.PLD} {
		p := privacy.Plan{Accounting: a, SampleRate: 0.04, Steps: 2250, Delta: 1e-5}
		g, err := p.Epsilon(1.5)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%v: epsilon %.6f (order %v)\n", a, g.Epsilon, g.Order)
	}
	// Output:
	// rdp: epsilon 7.329111 (order 3.9)
	// pld: epsilon 6.769546 (order 0)
}
