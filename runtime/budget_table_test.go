package runtime_test

import (
	"bytes"
	gort "runtime"
	"testing"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// Two PLD budgets' schedules: one of 200 steps (a milestone every 2) whose
// table takes seconds, long enough that steps outrun its computation,
// and one of 20 steps (a milestone each) whose table takes milliseconds.
var (
	longSchedule  = privacy.Schedule{DatasetSize: 10000, BatchSize: 50, Epochs: 1}
	shortSchedule = privacy.Schedule{DatasetSize: 1000, BatchSize: 50, Epochs: 1}
)

// budgetedAt opens dp_sgd under a budget of ε = 2 over s and takes steps
// steps; it returns σ_DP too.
func budgetedAt(t *testing.T, s privacy.Schedule, steps int) (*runtime.Optimizer, *runtime.Tensor, float64) {
	t.Helper()
	o, tn := openDPSGD(t)
	sigma, err := o.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: s})
	if err != nil {
		t.Fatal(err)
	}
	stepN(t, o, tn, steps)
	return o, tn, sigma
}

func stepN(t *testing.T, o *runtime.Optimizer, tn *runtime.Tensor, steps int) {
	t.Helper()
	g := make([]float32, tn.Len)
	for step := range steps {
		if err := stepAll(o, []*runtime.Tensor{tn}, g); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

// skipUnderRace skips a test of the table's logic under the race
// detector, where its accountant's work takes ten times as long (seconds
// each); TestSpentWhileStepping is the race detector's.
func skipUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the table's logic is tested without the race detector")
	}
}

// pldOf is o's budget's PLD accountant.
func pldOf(t *testing.T, o *runtime.Optimizer) *privacy.PLDAccountant {
	t.Helper()
	pld, ok := runtime.BudgetAccountant(o).(*privacy.PLDAccountant)
	if !ok {
		t.Fatal("the budget's accountant is not PLD")
	}
	return pld
}

// TestSpentComposesOutsideTheLock: an entry of the budget's table that
// Spent composes itself (one the background has not reached) holds up no
// step, report or Save: the optimizer's lock is free while it composes,
// and the entry is the accountant's. The background is stopped first
// (Close), so that the one composition under way is Spent's.
func TestSpentComposesOutsideTheLock(t *testing.T) {
	skipUnderRace(t)
	o, _, sigma := budgetedAt(t, longSchedule, longSchedule.Steps()) // Spent asks for the horizon, the table's last entry
	o.Close()
	<-o.BudgetTabled()
	pld := pldOf(t, o)
	before := pld.Evaluations()
	if before == privacy.Milestones {
		t.Skip("the background tabled the whole schedule before the steps ended: nothing is left for Spent to compose")
	}
	spent := make(chan privacy.Guarantee, 1)
	go func() {
		g, _ := o.Spent()
		spent <- g
	}()
	for pld.Evaluations() == before { // until Spent composes
		select {
		case g := <-spent:
			t.Fatalf("Spent returned %+v without composing", g)
		default:
			gort.Gosched()
		}
	}
	if !runtime.LockFree(o) {
		t.Error("Spent holds the optimizer's lock while it composes an entry of the budget's table")
	}
	got := <-spent
	acc, err := longSchedule.Accountant(sigma)
	if err != nil {
		t.Fatal(err)
	}
	if want := acc.EpsilonAfter(longSchedule.Steps()); got != want {
		t.Errorf("Spent composed %+v, the accountant reports %+v", got, want)
	}
}

// TestLoadKeepsTheBudgetsTable: a checkpoint loaded into an optimizer
// under the same budget (SetBudget, then load_state_dict: a trainer's
// resume) keeps the budget's accountant and the table computed since
// SetBudget, a function of the budget's settings alone, instead of
// composing it again; Spent goes on as the saving run's.
func TestLoadKeepsTheBudgetsTable(t *testing.T) {
	skipUnderRace(t)
	saver, stn, _ := budgetedAt(t, shortSchedule, 12)
	data := saveBytes(t, saver)
	o, tn, _ := budgetedAt(t, shortSchedule, 0)
	<-o.BudgetTabled()
	table, n := pldOf(t, o), o.AccountantEvaluations()
	if err := o.LoadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if pldOf(t, o) != table {
		t.Fatal("Load replaced the budget's accountant, whose table was computed, by a new one that computes it again")
	}
	<-o.BudgetTabled()
	if got := o.AccountantEvaluations(); got != n {
		t.Errorf("%d compositions after Load, %d before: the table was composed again", got, n)
	}
	checkSpentAlike(t, saver, stn, o, tn)
}

// TestResumeTablesOnlyTheStepsAhead: a run resumed at step 15 of 20 never
// asks for the ε at the milestones before it, and its table holds only
// the six from step 15 on (the horizon among them, which Load composes
// to check the checkpoint's σ); Spent is the saving run's, step by step.
func TestResumeTablesOnlyTheStepsAhead(t *testing.T) {
	skipUnderRace(t)
	saver, stn, _ := budgetedAt(t, shortSchedule, 15)
	data := saveBytes(t, saver)
	o, tn := openDPSGD(t)
	if err := o.LoadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	<-o.BudgetTabled()
	if got, want := o.AccountantEvaluations(), shortSchedule.Steps()-15+1; got != want {
		t.Errorf("the resumed run's table took %d compositions, want %d: the milestones from step 15 on", got, want)
	}
	checkSpentAlike(t, saver, stn, o, tn)
}

// checkSpentAlike steps the saving run and the resumed one to the end of
// the schedule, comparing Spent at each step; the step past it is
// refused on both.
func checkSpentAlike(t *testing.T, saver *runtime.Optimizer, stn *runtime.Tensor, o *runtime.Optimizer, tn *runtime.Tensor) {
	t.Helper()
	for step := o.Steps(); step <= shortSchedule.Steps(); step++ {
		want, _ := saver.Spent()
		if got, ok := o.Spent(); !ok || got != want {
			t.Errorf("after %d steps: the resumed run spent %+v (%v), the saving run %+v", step, got, ok, want)
		}
		if step < shortSchedule.Steps() {
			stepN(t, saver, stn, 1)
			stepN(t, o, tn, 1)
		}
	}
	g := make([]float32, tn.Len)
	if stepAll(o, []*runtime.Tensor{tn}, g) == nil || stepAll(saver, []*runtime.Tensor{stn}, g) == nil {
		t.Error("a step past the schedule was taken")
	}
}

// TestSpentWhileStepping: reports from another goroutine while the run
// steps and saves and the table is computed: the race detector's view of
// the accountant read outside the optimizer's lock (make race). Each
// report is the accountant's at some step of the run, and they never fall.
func TestSpentWhileStepping(t *testing.T) {
	o, tn, sigma := budgetedAt(t, shortSchedule, 0)
	done, reports := make(chan struct{}), make(chan []privacy.Guarantee)
	go func() {
		var got []privacy.Guarantee
		for {
			select {
			case <-done:
				reports <- got
				return
			default:
			}
			g, _ := o.Spent()
			got = append(got, g)
		}
	}()
	for step := range shortSchedule.Steps() {
		stepN(t, o, tn, 1)
		if step%5 == 0 {
			saveBytes(t, o)
		}
	}
	close(done)
	got := <-reports
	acc, err := shortSchedule.Accountant(sigma)
	if err != nil {
		t.Fatal(err)
	}
	valid := map[privacy.Guarantee]bool{}
	for step := 0; step <= shortSchedule.Steps(); step++ {
		valid[acc.EpsilonAfter(step)] = true
	}
	for i, g := range got {
		if !valid[g] || (i > 0 && g.Epsilon < got[i-1].Epsilon) {
			t.Fatalf("report %d of %d, %+v: not the accountant's at a step of the run, or below the one before, %+v", i, len(got), g, got[max(i-1, 0)])
		}
	}
}
