package ir_test

import (
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
)

// TestFilterValuesSelect: a filter's coefficient may be a select of the
// hypers (an atom of the noise analysis), and the host evaluates it with
// its three operands, as the kernels do: it once read two and gave NaN,
// so such a filter was refused as unstable at every setting.
func TestFilterValuesSelect(t *testing.T) {
	fn, _ := irtest.Build(t, irtest.Program("hyper lr = 0.1 in [0, inf)\nhyper kappa = 0.5 in [0, 1)\nstate m = 0",
		"m = select(kappa > 0.2, kappa, 0.25) * m + g\ntheta = theta - lr * m / (1 + attenuation(m))"))
	for _, tt := range []struct{ kappa, want float64 }{{0.5, 0.5}, {0.1, 0.25}} {
		h := fn.DefaultHypers()
		h[fn.HyperIndex("kappa")] = tt.kappa
		if m, _ := fn.FilterValues(fn.Filter("m"), h); m[0] != tt.want {
			t.Errorf("kappa=%v: M = %v, want [%v]", tt.kappa, m, tt.want)
		}
		if err := fn.CheckStability(h); err != nil {
			t.Errorf("kappa=%v: %v", tt.kappa, err)
		}
	}
}
