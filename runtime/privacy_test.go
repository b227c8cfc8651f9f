package runtime_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/google/go-cmp/cmp"
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

// openDPSGD opens dp_sgd with one tensor of 10 zeros, closed when the
// test ends.
func openDPSGD(t *testing.T) (*runtime.Optimizer, *runtime.Tensor) {
	t.Helper()
	o, err := runtime.Open(kernelDir(t, "dp_sgd"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	tn, _ := o.Register("w", make([]float32, 10))
	return o, tn
}

// TestBudgetHolds: while a budget holds its DP settings are the only ones
// (SetDP refused), it is set before the first step, and a checkpoint
// carries it, so that the resumed run spends exactly what the
// uninterrupted one does; a checkpoint whose DP settings are not its
// budget's, or one without a budget loaded under one, is refused.
func TestBudgetHolds(t *testing.T) {
	s := privacy.Schedule{DatasetSize: 1000, BatchSize: 100, Epochs: 2, Sampling: privacy.Fixed}
	o, tn := openDPSGD(t)
	if _, err := o.SetBudget(runtime.Budget{Epsilon: 3, Delta: 1e-4, ClipNorm: 0.5, Schedule: s}); err != nil {
		t.Fatal(err)
	}
	if err := o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 0.01, BatchSize: 100}); err == nil {
		t.Error("SetDP under a budget was accepted")
	}
	g := make([]float32, 10)
	for range 4 {
		if err := stepAll(o, []*runtime.Tensor{tn}, g); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.SetBudget(runtime.Budget{Epsilon: 3, ClipNorm: 0.5, Schedule: s}); err == nil {
		t.Error("SetBudget after steps was accepted")
	}
	data := saveBytes(t, o)
	resumed, _ := openDPSGD(t)
	if err := resumed.LoadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	want, _ := o.Spent()
	if got, ok := resumed.Spent(); !ok || got != want {
		t.Errorf("resumed: spent %+v (%v), the run that saved %+v", got, ok, want)
	}
	d1, _ := o.DP()
	if d2, _ := resumed.DP(); !cmp.Equal(d1, d2) {
		t.Errorf("the resumed DP settings differ (-saved +resumed):\n%s", cmp.Diff(d1, d2))
	}

	edited := rewrite(t, data, func(h map[string]any) { h["dp"].(map[string]any)["noise_multiplier"] = 0.01 })
	other, _ := openDPSGD(t)
	if err := other.LoadFrom(bytes.NewReader(edited)); !errors.Is(err, runtime.ErrCheckpointMismatch) {
		t.Errorf("DP settings other than the budget's: %v", err)
	}
	tampered := rewrite(t, data, func(h map[string]any) { // a little less noise (far less takes the accountant seconds)
		b := h["budget"].(map[string]any)
		sigma, _ := b["sigma"].(json.Number).Float64()
		b["sigma"] = 0.9 * sigma
	})
	if err := other.LoadFrom(bytes.NewReader(tampered)); !errors.Is(err, runtime.ErrCheckpointMismatch) {
		t.Errorf("a budget's σ that spends more than its ε: %v", err)
	}
	looser, _ := openDPSGD(t)
	looser.SetBudget(runtime.Budget{Epsilon: 8, Delta: 1e-4, ClipNorm: 0.5, Schedule: s})
	if err := looser.LoadFrom(bytes.NewReader(data)); !errors.Is(err, runtime.ErrCheckpointMismatch) ||
		!strings.Contains(err.Error(), "privacy budget is not the optimizer's: epsilon 3 (checkpoint), 8 (optimizer); sigma (calibrated) ") {
		t.Errorf("a checkpoint of another budget: %v; want the settings that differ, by name", err)
	}
	plain, ptn := openDPSGD(t)
	plain.SetDP(testDP)
	stepAll(plain, []*runtime.Tensor{ptn}, g)
	unbudgeted := saveBytes(t, plain)
	budgeted, _ := openDPSGD(t)
	budgeted.SetBudget(runtime.Budget{Epsilon: 3, ClipNorm: 0.5, Schedule: s})
	if err := budgeted.LoadFrom(bytes.NewReader(unbudgeted)); !errors.Is(err, runtime.ErrCheckpointMismatch) {
		t.Errorf("a checkpoint without a budget into an optimizer with one: %v", err)
	}
}

// TestBudgetAccounting: the budget's accountant is PLD unless it says
// RDP, which asks for more noise; a checkpoint carries the choice, and one
// written before PLD existed, without it, is RDP's.
func TestBudgetAccounting(t *testing.T) {
	sigmas := map[privacy.Accounting]float64{}
	checkpoints := map[privacy.Accounting][]byte{}
	for _, a := range []privacy.Accounting{privacy.PLD, privacy.RDP} {
		o, tn := openDPSGD(t)
		s := privacy.Schedule{DatasetSize: 1000, BatchSize: 50, Epochs: 2, Accounting: a}
		sigma, err := o.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: s})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := s.SigmaFor(2); sigma != want {
			t.Errorf("%v: σ_DP = %v, the accountant gives %v", a, sigma, want)
		}
		if err := stepAll(o, []*runtime.Tensor{tn}, make([]float32, 10)); err != nil {
			t.Fatal(err)
		}
		sigmas[a], checkpoints[a] = sigma, saveBytes(t, o)
	}
	if !(sigmas[privacy.RDP] > sigmas[privacy.PLD]) {
		t.Errorf("σ_DP by RDP %v, by PLD %v: want RDP's larger", sigmas[privacy.RDP], sigmas[privacy.PLD])
	}
	unmarked := func(a privacy.Accounting) error {
		data := rewrite(t, checkpoints[a], func(h map[string]any) { delete(h["budget"].(map[string]any), "accounting") })
		o, _ := openDPSGD(t)
		return o.LoadFrom(bytes.NewReader(data))
	}
	if err := unmarked(privacy.RDP); err != nil {
		t.Errorf("an RDP checkpoint without its accounting: %v", err)
	}
	if err := unmarked(privacy.PLD); !errors.Is(err, runtime.ErrCheckpointMismatch) {
		t.Errorf("a PLD checkpoint read as RDP's: %v", err)
	}
}

// TestBudgetCostsNothingPerStep: a PLD budget's table holds the ε at each
// milestone and the horizon, computed once in the background; steps and
// reports add no composition, and Spent gives the accountant's own
// reports, the refusal past the schedule included.
func TestBudgetCostsNothingPerStep(t *testing.T) {
	o, tn := openDPSGD(t)
	s := privacy.Schedule{DatasetSize: 10000, BatchSize: 50, Epochs: 1}
	sigma, err := o.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: s})
	if err != nil {
		t.Fatal(err)
	}
	if raceEnabled { // the table is a minute of compositions there: step while it is computed, then Close stops it
		stepWhileTabling(t, o, tn, 6)
		return
	}
	<-o.BudgetTabled()
	table := o.AccountantEvaluations()
	if table != privacy.Milestones {
		t.Fatalf("the table of %d steps took %d compositions, want one per milestone, %d", s.Steps(), table, privacy.Milestones)
	}
	acc, err := s.Accountant(sigma)
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float32, 10)
	for step := 0; step <= s.Steps(); step++ {
		spent, _ := o.Spent()
		if step%37 == 0 || step == s.Steps() {
			if want := acc.EpsilonAfter(step); spent != want {
				t.Errorf("after %d steps: spent %+v, the accountant reports %+v", step, spent, want)
			}
		}
		o.Observation()
		if err := stepAll(o, []*runtime.Tensor{tn}, g); (err != nil) != (step == s.Steps()) {
			t.Fatalf("step %d of %d: %v", step, s.Steps(), err)
		}
	}
	if n := o.AccountantEvaluations(); n != table {
		t.Errorf("%d steps and reports took %d compositions beyond the table's %d", s.Steps(), n-table, table)
	}
}

// stepWhileTabling takes steps with Spent and Observation at each while
// the budget's table is computed in the background: what the race
// detector checks of it.
func stepWhileTabling(t *testing.T, o *runtime.Optimizer, tn *runtime.Tensor, steps int) {
	t.Helper()
	g := make([]float32, tn.Len)
	for step := range steps {
		if _, ok := o.Spent(); !ok {
			t.Fatal("no budget")
		}
		o.Observation()
		if err := stepAll(o, []*runtime.Tensor{tn}, g); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}
