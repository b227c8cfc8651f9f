package privacy

import (
	"math"
	"testing"
)

// classicEpsilonFromRDP is Mironov's 2017 conversion (Proposition 3 of
// "Rényi Differential Privacy"), ε = min_α rdp - log δ/(α - 1), which
// Opacus used before the improved one; the tests use it to show which
// conversion a published value was computed with.
func classicEpsilonFromRDP(orders, rdp []float64, delta float64) Guarantee {
	best := Guarantee{Epsilon: math.Inf(1), Delta: delta, Order: orders[0]}
	for i, a := range orders {
		if e := rdp[i] - math.Log(delta)/(a-1); e < best.Epsilon {
			best.Epsilon, best.Order = e, a
		}
	}
	return best
}

// ε(α) at single orders, from the formula written out: the improved
// conversion, the KL shortcut to 0, and +Inf at orders up to 1.01.
func TestEpsilonAtOneOrder(t *testing.T) {
	for _, c := range []struct {
		alpha, rdp, delta, want float64
	}{
		{2, 1, 1e-5, 1 + math.Log(0.5) - (math.Log(1e-5)+math.Log(2))/1},
		{32, 1.1, 1e-5, 1.1 + math.Log1p(-1.0/32) - (math.Log(1e-5)+math.Log(32))/31},
		{10, 1e-12, 1e-5, 0}, // δ² > 1 - e^-rdp
		{1.005, 0.5, 1e-5, math.Inf(1)},
		{3, math.Inf(1), 1e-5, math.Inf(1)},
	} {
		g, err := EpsilonFromRDP([]float64{c.alpha}, []float64{c.rdp}, c.delta)
		if err != nil || math.Abs(g.Epsilon-max(c.want, 0)) > 1e-14*math.Abs(c.want) && g.Epsilon != c.want {
			t.Errorf("order %v rdp %v: epsilon %v (%v), want %v", c.alpha, c.rdp, g.Epsilon, err, c.want)
		}
	}
}

// The first order attaining the minimum is reported, and ε is at least 0.
func TestEpsilonPicksFirstMinimum(t *testing.T) {
	g, _ := EpsilonFromRDP([]float64{2, 3, 4}, []float64{50, 0, 0}, 0.5)
	if g.Epsilon != 0 || g.Order != 3 {
		t.Errorf("got %+v, want epsilon 0 at order 3", g)
	}
}

func TestEpsilonFromRDPErrors(t *testing.T) {
	for _, c := range []struct {
		orders, rdp []float64
		delta       float64
		msg         string
	}{
		{nil, nil, 1e-5, "no orders"},
		{[]float64{2, 3}, []float64{1}, 1e-5, "2 orders but 1 RDP values"},
		{[]float64{2}, []float64{1}, 0, "delta 0: want a value in (0, 1)"},
		{[]float64{2}, []float64{1}, 1, "delta 1: want a value in (0, 1)"},
		{[]float64{2}, []float64{1}, math.NaN(), "delta NaN: want a value in (0, 1)"},
		{[]float64{1}, []float64{1}, 1e-5, "order 1: want a finite order > 1"},
		{[]float64{math.Inf(1)}, []float64{1}, 1e-5, "order +Inf: want a finite order > 1"},
		{[]float64{2}, []float64{-1}, 1e-5, "RDP -1 at order 2: want a value >= 0"},
		{[]float64{2}, []float64{math.NaN()}, 1e-5, "RDP NaN at order 2: want a value >= 0"},
	} {
		if _, err := EpsilonFromRDP(c.orders, c.rdp, c.delta); err == nil || err.Error() != c.msg {
			t.Errorf("EpsilonFromRDP(%v, %v, %v): error %v, want %q", c.orders, c.rdp, c.delta, err, c.msg)
		}
	}
}
