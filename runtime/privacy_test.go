package runtime_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// TestBudget configures the noise from (ε, δ, N, B, epochs): σ_DP is the
// accountant's, ε spent grows to at most the target over the planned steps,
// and the step after them is refused.
func TestBudget(t *testing.T) {
	o, err := runtime.Open(kernelDir(t, "dp_sgd"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	tn, _ := o.Register("w", make([]float32, 10))
	s := privacy.Schedule{DatasetSize: 1000, BatchSize: 100, Epochs: 2}
	sigma, err := o.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: s})
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.SigmaFor(2)
	if err != nil || sigma != want {
		t.Fatalf("σ_DP = %v, the accountant gives %v (%v)", sigma, want, err)
	}
	if g, ok := o.Spent(); !ok || g.Epsilon != 0 {
		t.Errorf("before any step: spent %+v, %v", g, ok)
	}
	g := make([]float32, 10)
	for step := range s.Steps() {
		if err := stepAll(o, []*runtime.Tensor{tn}, g); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	spent, _ := o.Spent()
	if spent.Epsilon > 2 || spent.Epsilon < 1.99 || spent.Delta != privacy.DefaultDelta(1000) {
		t.Errorf("after %d steps: spent %+v, want ε just below 2 at δ = 1/N^1.1", s.Steps(), spent)
	}
	if err := stepAll(o, []*runtime.Tensor{tn}, g); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("the step past the schedule: %v", err)
	}
	// θ moved by -lr·noise with noise std σ·C/B: a rough check that the noise is there.
	p, _ := tn.Params()
	if math.Abs(float64(p[0])) == 0 {
		t.Error("no noise was drawn")
	}
}

// TestBudgetErrors: an unreachable target is an error and sets nothing.
func TestBudgetErrors(t *testing.T) {
	o, err := runtime.Open(kernelDir(t, "dp_sgd"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.SetBudget(runtime.Budget{Epsilon: 0, ClipNorm: 1, Schedule: privacy.Schedule{DatasetSize: 10, BatchSize: 5, Epochs: 1}}); err == nil {
		t.Error("ε = 0 was accepted")
	}
	if _, ok := o.Spent(); ok {
		t.Error("a failed SetBudget left a budget")
	}
}
