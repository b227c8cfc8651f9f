package privacy

import (
	"math"
	"testing"
)

func TestMechanismErrors(t *testing.T) {
	for _, c := range []struct {
		m      Mechanism
		orders []float64
		msg    string
	}{
		{Mechanism{Sigma: 0, SampleRate: 0.1}, []float64{2}, "sigma 0: want a finite value > 0"},
		{Mechanism{Sigma: -1, SampleRate: 0.1}, []float64{2}, "sigma -1: want a finite value > 0"},
		{Mechanism{Sigma: math.NaN(), SampleRate: 0.1}, []float64{2}, "sigma NaN: want a finite value > 0"},
		{Mechanism{Sigma: math.Inf(1), SampleRate: 0.1}, []float64{2}, "sigma +Inf: want a finite value > 0"},
		{Mechanism{Sigma: 1, SampleRate: 1.5}, []float64{2}, "sample rate 1.5: want a value in [0, 1]"},
		{Mechanism{Sigma: 1, SampleRate: math.NaN()}, []float64{2}, "sample rate NaN: want a value in [0, 1]"},
		{Mechanism{Sigma: 1, SampleRate: 0.1, Sampling: 7}, []float64{2}, "unknown sampling Sampling(7)"},
		{Mechanism{Sigma: 1, SampleRate: 0.1, Series: 7}, []float64{2}, "unknown series Series(7)"},
		{Mechanism{Sigma: 1, SampleRate: 0.1}, nil, "no orders"},
		{Mechanism{Sigma: 1, SampleRate: 0.1}, []float64{2, 1}, "order 1: want an order in (1, 10000]"},
		{Mechanism{Sigma: 1, SampleRate: 0.1}, []float64{10001}, "order 10001: want an order in (1, 10000]"},
		{Mechanism{Sigma: 1, SampleRate: 0.1}, []float64{math.NaN()}, "order NaN: want an order in (1, 10000]"},
	} {
		if _, err := c.m.RDP(c.orders); err == nil || err.Error() != c.msg {
			t.Errorf("%+v.RDP(%v): error %v, want %q", c.m, c.orders, err, c.msg)
		}
	}
}

func TestParseNames(t *testing.T) {
	for _, s := range []Sampling{Poisson, Fixed, Cyclic} {
		if got, err := ParseSampling(s.String()); got != s || err != nil {
			t.Errorf("ParseSampling(%q) = %v, %v", s.String(), got, err)
		}
	}
	for _, s := range []Series{ExactSeries, MagnitudeSeries} {
		if got, err := ParseSeries(s.String()); got != s || err != nil {
			t.Errorf("ParseSeries(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseSampling("shuffle"); err == nil || err.Error() != `sampling "shuffle": want poisson, fixed or cyclic` {
		t.Errorf("ParseSampling(shuffle): %v", err)
	}
	if _, err := ParseSeries("abs"); err == nil || err.Error() != `series "abs": want exact or magnitudes` {
		t.Errorf("ParseSeries(abs): %v", err)
	}
}

// Extreme but valid inputs give finite or +Inf RDP, never NaN or a
// negative value.
func TestExtremeInputs(t *testing.T) {
	orders := []float64{1.01, 1.5, 2, 63.5, 256, 1024, 9999.5, 10000}
	for _, s := range []Sampling{Poisson, Fixed} {
		for _, sigma := range []float64{1e-6, 1e-3, 0.1, 1e3, 1e6} {
			for _, q := range []float64{1e-9, 0.5, 1 - 1e-9} {
				rdp, err := Mechanism{Sigma: sigma, SampleRate: q, Sampling: s}.RDP(orders)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range rdp {
					if math.IsNaN(r) || r < 0 {
						t.Errorf("%v sigma %v q %v order %v: RDP %v", s, sigma, q, orders[i], r)
					}
				}
			}
		}
	}
}

// DefaultOrders contains dp_accounting's DEFAULT_RDP_ORDERS and Opacus'
// DEFAULT_ALPHAS, is increasing, and has no gap wider than 10%.
func TestDefaultOrders(t *testing.T) {
	d := DefaultOrders()
	have := map[float64]bool{}
	for i, a := range d {
		have[a] = true
		if i > 0 && (a <= d[i-1] || a > 1.1*d[i-1]) {
			t.Errorf("orders %v and %v are out of order or too far apart", d[i-1], a)
		}
	}
	dpAccounting := []float64{128, 256, 512, 1024}
	for x := 1; x < 100; x++ {
		dpAccounting = append(dpAccounting, 1+float64(x)/10)
	}
	for a := 11; a < 64; a++ {
		dpAccounting = append(dpAccounting, float64(a))
	}
	for _, a := range append(dpAccounting, opacusOrders()...) {
		if !have[a] {
			t.Errorf("order %v is not among the defaults", a)
		}
	}
	if d[0] != 1.1 || d[len(d)-1] != 1024 {
		t.Errorf("orders run from %v to %v, want 1.1 to 1024", d[0], d[len(d)-1])
	}
}

// A much denser grid of orders lowers ε by at most a few percent from
// the defaults' (docs/privacy.md gives the measured maxima over a larger
// grid: 3.6% for ε >= 0.5, 6.5% for ε in [0.1, 0.5)).
func TestDefaultOrdersNearDense(t *testing.T) {
	var dense []float64
	for a := 1.05; a < 20; a += 0.05 {
		dense = append(dense, a)
	}
	for a := 20.0; a <= 1024; a *= 1.01 {
		dense = append(dense, a)
	}
	for _, c := range []struct {
		q, sigma float64
		steps    int
	}{
		{1e-4, 1, 100}, {1e-3, 1, 1}, {1e-4, 2, 1}, {0.01, 0.5, 10000}, {0.004, 1, 2350}, {0.01, 4, 1000},
	} {
		m := Mechanism{Sigma: c.sigma, SampleRate: c.q}
		def, _ := NewRDPAccountant(m, 1e-8, nil)
		den, _ := NewRDPAccountant(m, 1e-8, dense)
		gd, gn := def.EpsilonAfter(c.steps), den.EpsilonAfter(c.steps)
		if gd.Epsilon > 1.07*gn.Epsilon || gd.Epsilon >= 0.5 && gd.Epsilon > 1.04*gn.Epsilon {
			t.Errorf("q %v sigma %v %d steps: epsilon %v with the defaults, %v with a dense grid", c.q, c.sigma, c.steps, gd.Epsilon, gn.Epsilon)
		}
	}
}
