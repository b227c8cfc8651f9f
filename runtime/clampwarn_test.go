package runtime_test

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// clampRun steps the optimizer in dir (fiber's tensors, testDP's noise,
// σ_w = 0.017, on gradients 1e-4 N(0, 1) that it dominates) with the hypers set, and
// returns the warnings after each step and the parameters at the end.
func clampRun(t *testing.T, dir string, opts runtime.Options, hypers map[string]float64, steps int) ([][]string, []float32) {
	t.Helper()
	theta, grads := inputs(steps)
	for _, g := range grads {
		for i := range g {
			g[i] *= 1e-3
		}
	}
	o, ts := openSized(t, dir, opts, tensorSizes, theta)
	if err := o.SetHypers(hypers); err != nil {
		t.Fatal(err)
	}
	var warned [][]string
	for step := range steps {
		if err := stepAll(o, ts, grads[step]); err != nil {
			t.Fatal(err)
		}
		warned = append(warned, o.Warnings())
	}
	return warned, flatParams(t, ts)
}

// warnedAt returns the steps after which a warning came.
func warnedAt(warned [][]string) []int {
	var at []int
	for step, w := range warned {
		if len(w) > 0 {
			at = append(at, step)
		}
	}
	return at
}

// TestClampWarning: fiber on noise-dominated gradients keeps clamp_mass
// near 0.4, so the warning comes once, after the fifth sample (step 49),
// names the floor and how to turn it off, and changes no step; with
// NoClampWarning, with a floor raised so that nearly everything sits on it
// (one step size), and on a floor that scales with the noise, none comes.
func TestClampWarning(t *testing.T) {
	const steps = 80
	fiber := kernelDir(t, "fiber")
	warned, theta := clampRun(t, fiber, runtime.Options{}, nil, steps)
	if at := warnedAt(warned); len(at) != 1 || at[0] != 49 {
		t.Fatalf("fiber: warnings after steps %v, want after step 49 only: %q", at, warned)
	}
	msg := warned[49][0]
	for _, want := range []string{"fiber: clamp_mass stayed above 0.2 for 50 steps", "fixed floor eps_v", "fiber_nfloor", "NoClampWarning"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the warning %q does not say %q", msg, want)
		}
	}
	quiet, quietTheta := clampRun(t, fiber, runtime.Options{NoClampWarning: true}, nil, steps)
	if at := warnedAt(quiet); len(at) > 0 {
		t.Errorf("NoClampWarning: warnings after steps %v", at)
	}
	if !sameBits(theta, quietTheta) {
		t.Error("the warning's samples changed the steps")
	}
	for _, c := range []struct {
		name, dir string
		hypers    map[string]float64
	}{
		{"fiber, eps_v = 1e-2", fiber, map[string]float64{"eps_v": 1e-2}},
		{"fiber_nfloor", kernelDir(t, "fiber_nfloor"), nil},
		{"fiber_rfloor", kernelDir(t, "fiber_rfloor"), nil},
	} {
		if at := warnedAt(firstOf(clampRun(t, c.dir, runtime.Options{}, c.hypers, steps))); len(at) > 0 {
			t.Errorf("%s: warnings after steps %v", c.name, at)
		}
	}
}

func firstOf[A, B any](a A, _ B) A { return a }
