package privacy

import (
	"math"
	"strings"
	"testing"
)

// gridOrders is a short set of orders, fractional and integer, that
// keeps the calibration grid fast; the defaults are tested separately.
var gridOrders = []float64{1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12.5, 16, 24, 32, 64}

// Round trips: Sigma meets the target, its guarantee is what Epsilon
// reports for it, and σ/(1+SigmaTolerance) misses the target (the
// bisection's lower end, which misses it, is at least that large, and ε
// falls with σ).
func TestSigmaRoundTrip(t *testing.T) {
	for _, s := range []Sampling{Poisson, Fixed} {
		for _, eps := range []float64{0.5, 2, 8} {
			for _, q := range []float64{1e-3, 0.02, 0.2} {
				for _, steps := range []int{10, 1000, 100000} {
					p := Plan{Sampling: s, SampleRate: q, Steps: steps, Delta: 1e-5, Orders: gridOrders, Accounting: RDP}
					checkRoundTrip(t, p, eps)
				}
			}
		}
	}
	// And two with the default orders.
	checkRoundTrip(t, Plan{SampleRate: 256.0 / 60000, Steps: 2350, Delta: DefaultDelta(60000), Accounting: RDP}, 3)
	checkRoundTrip(t, Plan{Sampling: Fixed, SampleRate: 0.01, Steps: 5000, Delta: 1e-6, Accounting: RDP}, 1)
}

func checkRoundTrip(t *testing.T, p Plan, eps float64) {
	t.Helper()
	sigma, g, err := p.Sigma(eps)
	if err != nil {
		t.Errorf("%+v: Sigma(%v): %v", p, eps, err)
		return
	}
	again, _ := p.Epsilon(sigma)
	below, _ := p.Epsilon(sigma / (1 + SigmaTolerance))
	switch {
	case g.Epsilon > eps:
		t.Errorf("%+v: Sigma(%v) = %v overshoots: epsilon %v", p, eps, sigma, g.Epsilon)
	case again != g:
		t.Errorf("%+v: Sigma(%v) reports %+v, Epsilon(%v) gives %+v", p, eps, g, sigma, again)
	case below.Epsilon <= eps:
		t.Errorf("%+v: Sigma(%v) = %v is not the smallest: epsilon(%v) = %v", p, eps, sigma, sigma/(1+SigmaTolerance), below.Epsilon)
	}
}

func TestSigmaErrors(t *testing.T) {
	base := Plan{SampleRate: 0.01, Steps: 100, Delta: 1e-5, Orders: gridOrders, Accounting: RDP}
	long := Plan{SampleRate: 1, Steps: 1e9, Delta: 1e-5, Orders: gridOrders, Accounting: RDP}
	for _, c := range []struct {
		p   Plan
		eps float64
		msg string
	}{
		{base, 0, "epsilon 0: want a finite value > 0"},
		{base, -1, "epsilon -1: want a finite value > 0"},
		{base, math.NaN(), "epsilon NaN: want a finite value > 0"},
		{base, math.Inf(1), "epsilon +Inf: want a finite value > 0"},
		{long, 1e-4, "epsilon 0.0001 is out of reach: even sigma = 1e+06 gives epsilon "},
		{Plan{SampleRate: 0.01, Steps: 1, Delta: 1e-5, Orders: gridOrders, Accounting: RDP}, 1e13, "epsilon 1e+13 is met even by sigma = 1e-06, the smallest searched"},
		{Plan{SampleRate: 0, Steps: 1, Delta: 1e-5}, 1, "sample rate 0: want a value in (0, 1]"},
		{Plan{SampleRate: 0.1, Steps: 0, Delta: 1e-5}, 1, "0 steps: want 1 to 2^53"},
		{Plan{SampleRate: 0.1, Steps: 1, Delta: 1}, 1, "delta 1: want a value in (0, 1)"},
		{Plan{SampleRate: 0.1, Steps: 1, Delta: 1e-5, Orders: []float64{0.5}, Accounting: RDP}, 1, "order 0.5: want an order in (1, 10000]"},
	} {
		if _, _, err := c.p.Sigma(c.eps); err == nil || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%+v.Sigma(%v): error %v, want %q", c.p, c.eps, err, c.msg)
		}
	}
}
