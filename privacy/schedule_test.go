package privacy

import (
	"math"
	"testing"
)

func TestScheduleSteps(t *testing.T) {
	for _, c := range []struct {
		n, b   int
		epochs float64
		want   int
	}{
		{60000, 256, 3, 3 * 235}, // ⌈60000/256⌉ = 235 batches an epoch
		{1000, 100, 2.5, 25},
		{10, 3, 0.1, 1}, // 0.4 of a step is a step
		{30, 1, 0.1, 3}, // 0.1·30 is 3.0000000000000004 in float64
		{7, 7, 1, 1},
		{100, 200, 1, 0}, // batch larger than the dataset
		{0, 1, 1, 0},
		{10, 1, 0, 0},
		{10, 1, math.NaN(), 0},
		{10, 1, 1e300, MaxSteps + 1},
	} {
		s := Schedule{DatasetSize: c.n, BatchSize: c.b, Epochs: c.epochs}
		if got := s.Steps(); got != c.want {
			t.Errorf("N %d B %d epochs %v: %d steps, want %d", c.n, c.b, c.epochs, got, c.want)
		}
	}
}

func TestDefaultDelta(t *testing.T) {
	for _, n := range []int{2, 1000, 60000, 1 << 30} {
		if got, want := DefaultDelta(n), math.Exp(-1.1*math.Log(float64(n))); math.Abs(got-want) > 1e-14*want {
			t.Errorf("DefaultDelta(%d) = %v, want 1/N^1.1 = %v", n, got, want)
		}
	}
}

func TestSchedulePlan(t *testing.T) {
	s := Schedule{DatasetSize: 60000, BatchSize: 256, Epochs: 3, Sampling: Fixed}
	p, err := s.Plan()
	want := Plan{Sampling: Fixed, SampleRate: 256.0 / 60000, Steps: 705, Delta: DefaultDelta(60000)}
	if err != nil || p.Sampling != want.Sampling || p.SampleRate != want.SampleRate || p.Steps != want.Steps || p.Delta != want.Delta {
		t.Errorf("Plan() = %+v, %v; want %+v", p, err, want)
	}
	if s.Delta = 1e-7; mustPlan(t, s).Delta != 1e-7 {
		t.Errorf("an explicit delta is not kept")
	}
}

func mustPlan(t *testing.T, s Schedule) Plan {
	t.Helper()
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSchedulePlanErrors(t *testing.T) {
	for _, c := range []struct {
		s   Schedule
		msg string
	}{
		{Schedule{DatasetSize: 0, BatchSize: 1, Epochs: 1}, "dataset size 0: want at least 1"},
		{Schedule{DatasetSize: 10, BatchSize: 0, Epochs: 1}, "batch size 0: want 1 to the dataset size 10"},
		{Schedule{DatasetSize: 10, BatchSize: 11, Epochs: 1}, "batch size 11: want 1 to the dataset size 10"},
		{Schedule{DatasetSize: 10, BatchSize: 1, Epochs: 0}, "0 epochs: want a finite number > 0"},
		{Schedule{DatasetSize: 10, BatchSize: 1, Epochs: math.Inf(1)}, "+Inf epochs: want a finite number > 0"},
		{Schedule{DatasetSize: 10, BatchSize: 1, Epochs: 1e300}, "9007199254740993 steps: want 1 to 2^53"},
		{Schedule{DatasetSize: 1, BatchSize: 1, Epochs: 1}, "dataset size 1: the default delta 1/N^1.1 is 1; give a delta"},
		{Schedule{DatasetSize: 10, BatchSize: 1, Epochs: 1, Delta: 2}, "delta 2: want a value in (0, 1)"},
	} {
		if _, err := c.s.Plan(); err == nil || err.Error() != c.msg {
			t.Errorf("%+v.Plan(): error %v, want %q", c.s, err, c.msg)
		}
		if _, err := c.s.SigmaFor(1); err == nil || err.Error() != c.msg {
			t.Errorf("%+v.SigmaFor(1): error %v, want %q", c.s, err, c.msg)
		}
		if _, err := c.s.Accountant(1); err == nil || err.Error() != c.msg {
			t.Errorf("%+v.Accountant(1): error %v, want %q", c.s, err, c.msg)
		}
	}
}

// NoiseStd is σ times the sensitivity of the clipped sum, over B.
func TestNoiseStd(t *testing.T) {
	for _, c := range []struct {
		sampling Sampling
		want     float64
	}{
		{Poisson, 1.5 * 0.5 / 100}, {Fixed, 1.5 * 2 * 0.5 / 100},
	} {
		s := Schedule{DatasetSize: 1000, BatchSize: 100, Epochs: 1, Sampling: c.sampling}
		if got := s.NoiseStd(1.5, 0.5); math.Abs(got-c.want) > 1e-16 {
			t.Errorf("%v: NoiseStd = %v, want %v", c.sampling, got, c.want)
		}
	}
}

// The accountant reports nothing spent before the first step, ε that
// grows with the steps, and at the last step what the plan reports; and
// the σ SigmaFor calibrates spends at most the target.
func TestAccountant(t *testing.T) {
	s := Schedule{DatasetSize: 10000, BatchSize: 100, Epochs: 2, Orders: gridOrders, Accounting: RDP}
	sigma, err := s.SigmaFor(2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Accountant(sigma)
	if err != nil {
		t.Fatal(err)
	}
	if g := a.EpsilonAfter(0); g.Epsilon != 0 {
		t.Errorf("EpsilonAfter(0) = %+v", g)
	}
	prev := 0.0
	for step := 1; step <= s.Steps(); step++ {
		g := a.EpsilonAfter(step)
		if g.Epsilon < prev {
			t.Fatalf("epsilon falls from %v to %v at step %d", prev, g.Epsilon, step)
		}
		prev = g.Epsilon
	}
	want, _ := mustPlan(t, s).Epsilon(sigma)
	if got := a.EpsilonAfter(s.Steps()); got != want || got.Epsilon > 2 {
		t.Errorf("EpsilonAfter(%d) = %+v, plan says %+v (target 2)", s.Steps(), got, want)
	}
}
