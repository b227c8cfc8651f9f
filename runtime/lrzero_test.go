package runtime_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/runtime"
)

// TestZeroLearningRateHoldsTheta steps every shipped optimizer at lr = 0, as
// a scheduler's warm-up starts and a cosine to eta_min = 0 ends: each one's
// update is lr·(...) (its weight decay lr·wd·theta too, here at wd = 0.1),
// so theta keeps its bits, under DP noise, on the reference and the host
// kernel alike; one more step at lr = 1e-3 then moves it.
func TestZeroLearningRateHoldsTheta(t *testing.T) {
	names, err := filepath.Glob("../optimizers/*.dsl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shipped optimizers: %v", err)
	}
	theta, grads := inputs(4)
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".dsl")
		for _, backend := range []runtime.Backend{runtime.Go, runtime.CPU} {
			t.Run(name+"/"+string(backend), func(t *testing.T) {
				o, ts := openSized(t, kernelDir(t, name), runtime.Options{Backend: backend}, tensorSizes, slices.Clone(theta))
				if err := o.ApplySettings(zeroLRSettings(o)); err != nil {
					t.Fatal(err)
				}
				for step, g := range grads[:3] {
					if err := stepAll(o, ts, g); err != nil {
						t.Fatalf("step %d at lr = 0: %v", step, err)
					}
				}
				if got := flatParams(t, ts); !floatbits.Equal(got, theta) {
					t.Fatalf("theta changed at lr = 0 (first difference at %d)", floatbits.FirstDiff(got, theta))
				}
				if err := o.ApplySettings([]string{"lr=1e-3"}); err != nil {
					t.Fatal(err)
				}
				if err := stepAll(o, ts, grads[3]); err != nil {
					t.Fatal(err)
				}
				if floatbits.Equal(flatParams(t, ts), theta) {
					t.Error("theta did not change at lr = 1e-3: the steps before did not reach it")
				}
			})
		}
	}
}

// zeroLRSettings sets lr = 0, and wd = 0.1 where the optimizer has a wd.
func zeroLRSettings(o *runtime.Optimizer) []string {
	set := []string{"lr=0"}
	for _, h := range o.Hypers() {
		if h.Name == "wd" {
			set = append(set, "wd=0.1")
		}
	}
	return set
}
