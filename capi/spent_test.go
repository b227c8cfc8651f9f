package main

import (
	gort "runtime"
	"testing"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// TestSpentHoldsNoHandle: fg_spent composing an entry of the budget's
// table (one its computation in the background has not reached) leaves
// the handle free for another thread's calls, as the runtime leaves its
// optimizer's lock. The background is stopped first, so that the one
// composition under way is fg_spent's.
func TestSpentHoldsNoHandle(t *testing.T) {
	o, err := runtime.Open("../generated/dp_sgd", runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatal(err)
	}
	s := privacy.Schedule{DatasetSize: 10000, BatchSize: 50, Epochs: 1} // 200 steps, whose table takes seconds
	if _, err := o.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: s}); err != nil {
		t.Fatal(err)
	}
	stepBudget(t, o, s.Steps()) // fg_spent asks for the horizon, the table's last entry
	o.Close()
	<-o.BudgetTabled()
	h := register(o)
	defer func() {
		handles.Lock()
		delete(handles.m, h)
		handles.Unlock()
	}()
	before := o.AccountantEvaluations()
	if before == privacy.Milestones {
		t.Skip("the background tabled the whole schedule before the steps ended")
	}
	done := make(chan error, 1)
	go func() {
		_, err := spentOf(h)
		done <- err
	}()
	for o.AccountantEvaluations() == before { // until fg_spent composes
		select {
		case err := <-done:
			t.Fatalf("fg_spent answered (%v) without composing", err)
		default:
			gort.Gosched()
		}
	}
	x, _ := handleOf(h)
	if !x.mu.TryLock() {
		t.Error("fg_spent holds the handle while it composes an entry of the budget's table")
	} else {
		x.mu.Unlock()
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// stepBudget takes steps steps on one tensor of 10 zeros, each gradient
// vouched for.
func stepBudget(t *testing.T, o *runtime.Optimizer, steps int) {
	t.Helper()
	tn, err := o.Register("w", make([]float32, 10))
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float32, 10)
	for step := range steps {
		if err := tn.SetGrad(g); err != nil {
			t.Fatal(err)
		}
		if err := o.TrustClippedGradient(); err != nil {
			t.Fatal(err)
		}
		if err := o.Step(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}
