package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir/interp"
)

// coupledSrc feeds weight decay's wd·θ into a momentum buffer b whose
// attenuation the step names: z = (b, θ), and at wd = 0 θ no longer feeds b.
const coupledSrc = `optimizer coupled
hyper lr = 0.1
hyper mu = 0.9 in [0, 1]
hyper wd = 0.01 in [0, inf)
state b = 0
state s = 0
step {
	b = mu * b + (g + wd * theta)
	s = 0.9 * s + attenuation(b) * sigma_w2
	theta = theta - lr * b + 0 * s
}
`

// TestCoupledDecayAtZero (issue 34): wd = 0 cuts θ's integrator off b, so
// the setting is stable and b's attenuation is the momentum's own
// 1/(1−μ²); μ = 1 is still refused.
func TestCoupledDecayAtZero(t *testing.T) {
	fn, _ := irtest.Build(t, coupledSrc)
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	h := fn.DefaultHypers()
	h[fn.HyperIndex("wd")] = 0
	if err := p.Check(h); err != nil {
		t.Fatalf("wd = 0: %v", err)
	}
	mu := h[fn.HyperIndex("mu")]
	want := 1 / (1 - mu*mu) // the closed form rounds per operation in float64: a few ulps
	if steady, _, _ := p.Attenuation("b", h, -1); math.Abs(steady-want) > 4e-16*want {
		t.Errorf("attenuation(b) at wd = 0 = %v, want 1/(1−μ²) = %v", steady, want)
	}
	h[fn.HyperIndex("mu")] = 1
	if err := p.Check(h); err == nil || !strings.Contains(err.Error(), "the filter of state b is unstable") {
		t.Errorf("mu = 1, wd = 0: %v, want b unstable", err)
	}
}
