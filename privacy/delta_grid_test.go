package privacy

import (
	"fmt"
	"testing"
)

// TestDeltaAnswersWhereEpsilonDoes: on a grid of σ, q, T and ε, DeltaAt
// answers under PLD; the ε the accountant gives at that δ is at most the
// ε asked, up to the rounding of the curve's inversion (the two agree); and the δ is never below a reference: the
// exact Gaussian's for q = 1 (TestDeltaAt's), else a computation on a grid four times
// finer, tighter by the accountant's pessimistic discretisation. The
// grid's δ run from about 1e-9 to 0.1, where the tails and the rounding
// floor do not dominate the ε at that δ.
func TestDeltaAnswersWhereEpsilonDoes(t *testing.T) {
	checked := 0
	for _, sigma := range []float64{0.6, 1, 2} {
		for _, q := range []float64{0.005, 0.05, 0.5} {
			for _, steps := range []int{20, 300} {
				for _, eps := range []float64{0.5, 1.5, 4} {
					name := fmt.Sprintf("σ %v q %v T %d ε %v", sigma, q, steps, eps)
					p := Plan{SampleRate: q, Steps: steps}
					d, err := p.DeltaAt(sigma, eps)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if !(d >= 1e-10 && d <= 0.1) {
						continue
					}
					checked++
					if ref := deltaReference(t, p, sigma, eps); d < ref {
						t.Errorf("%s: δ %v, below the reference %v", name, d, ref)
					}
					p.Delta = d
					if g, err := p.Epsilon(sigma); err != nil || g.Epsilon > eps*(1+epsilonRounding) {
						t.Errorf("%s: δ %v, whose ε is %v (%v)", name, d, g.Epsilon, err)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("%d points checked, want at least 20", checked)
	}
}

// epsilonRounding is how far above the ε asked the ε at DeltaAt's δ may
// come out: lossDist.epsilon solves the curve's linear piece through a
// logarithm, exact up to its last bits (measured: 2e-14 relatively).
const epsilonRounding = 1e-12

// deltaReference is a δ DeltaAt must not be below.
func deltaReference(t *testing.T, p Plan, sigma, eps float64) float64 {
	p.Interval = p.PLDInterval(sigma) / 4
	ref, err := p.DeltaAt(sigma, eps)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestDeltaOfALongRun: issue 31's run, σ = 0.5, q = 1e-4, T = 10⁵, whose
// δ(3) (about 7e-7) DeltaAt refused, its tails retried at 1e-9 beyond the
// grid's limit: it answers, below RDP's bound.
func TestDeltaOfALongRun(t *testing.T) {
	p := Plan{SampleRate: 1e-4, Steps: 100000}
	d, err := p.DeltaAt(0.5, 3)
	p.Accounting = RDP
	rdp, _ := p.DeltaAt(0.5, 3)
	if err != nil || !(d > 0 && d < rdp) {
		t.Errorf("δ(3) = %v (%v), RDP's %v", d, err, rdp)
	}
}
