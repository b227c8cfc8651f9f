package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/fibergen/fibergen/privacy"
)

// TestAnswerQuery: fg_privacy's answers are the accountant's, both ways,
// on a run of 40 steps (privacy/ tests long runs; this one stays fast
// under the race detector).
func TestAnswerQuery(t *testing.T) {
	s := privacy.Schedule{DatasetSize: 6000, BatchSize: 300, Epochs: 2}
	sigma, err := s.SigmaFor(3)
	if err != nil {
		t.Fatal(err)
	}
	a, err := answerQuery(`{"dataset_size": 6000, "batch_size": 300, "epochs": 2, "epsilon": 3}`)
	if err != nil || a.Sigma != sigma || a.Steps != s.Steps() || a.Epsilon > 3 {
		t.Errorf("sigma query: %+v, %v; want σ = %v", a, err, sigma)
	}
	b, err := answerQuery(`{"dataset_size": 6000, "batch_size": 300, "epochs": 2, "sigma": 1.1, "sampling": "fixed"}`)
	if err != nil || b.Sigma != 1.1 || !(b.Epsilon > 0) {
		t.Errorf("epsilon query: %+v, %v", b, err)
	}
	rdp, err := answerQuery(`{"dataset_size": 6000, "batch_size": 300, "epochs": 2, "epsilon": 3, "accountant": "rdp"}`)
	if err != nil || rdp.Accountant != "rdp" || a.Accountant != "pld" || !(rdp.Sigma > a.Sigma) || rdp.Order == 0 || a.Order != 0 {
		t.Errorf("rdp %+v, pld %+v, %v: want RDP's σ above PLD's", rdp, a, err)
	}
	d, err := answerQuery(`{"dataset_size": 6000, "batch_size": 300, "epochs": 2, "sigma": 1.1, "epsilon": 2}`)
	p, _ := s.Plan()
	if want, _ := p.DeltaAt(1.1, 2); err != nil || d.Delta != want || d.Epsilon != 2 || d.Sigma != 1.1 {
		t.Errorf("delta query: %+v, %v; want δ = %v", d, err, want)
	}
	cyc, err := answerQuery(`{"dataset_size": 6000, "batch_size": 300, "epochs": 2, "sigma": 1.1, "sampling": "cyclic"}`)
	if want := privacy.GaussianEpsilon(math.Sqrt(2)/1.1, cyc.Delta); err != nil || cyc.Epsilon != want {
		t.Errorf("cyclic epsilon query: %+v, %v; want the Gaussian mechanism's ε at μ = √2/σ, %v", cyc, err, want)
	}
	for _, bad := range []string{`{}`, `{"sigma": -1, "epsilon": 1}`, `{"sigma": 1, "dataset_size": 10, "batch_size": 20, "epochs": 1}`,
		`{"sigma": 1, "colour": 2}`, `{"sigma": 1, "dataset_size": 10, "batch_size": 2, "epochs": 1, "sampling": "round"}`, `[`,
		`{"sigma": 1, "dataset_size": 10, "batch_size": 2, "epochs": 1, "accountant": "prv"}`} {
		if _, err := answerQuery(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// long reports whether a request's run is long enough that its
// accounting could take seconds, which random fuzzing reports as a hang:
// over 10^5 steps, or over 10^3 under PLD, whose calibration at a tiny
// sample rate and a long run takes seconds (docs/privacy.md).
// privacy/'s tests cover those runs.
func long(req string) bool {
	var q query
	if decodeJSON("privacy query", req, &q) != nil {
		return false
	}
	s, err := q.schedule.schedule()
	limit := map[privacy.Accounting]int{privacy.PLD: 1e3, privacy.RDP: 1e5}[s.Accounting]
	return err == nil && s.Steps() > limit
}

// FuzzAnswerQuery: any request gets an answer or an error, never a panic,
// and an answer is finite and marshals.
func FuzzAnswerQuery(f *testing.F) {
	f.Add(`{"dataset_size": 60000, "batch_size": 256, "epochs": 10, "epsilon": 3}`)
	f.Add(`{"dataset_size": 100, "batch_size": 100, "epochs": 0.5, "sigma": 0.5, "sampling": "fixed", "delta": 1e-3}`)
	f.Add(`{"dataset_size": 1000, "batch_size": 10, "epochs": 3, "sigma": 1, "accountant": "rdp"}`)
	f.Fuzz(func(t *testing.T, req string) {
		if long(req) {
			return
		}
		a, err := answerQuery(req)
		if err != nil {
			return
		}
		if math.IsNaN(a.Epsilon) || math.IsNaN(a.Sigma) {
			t.Fatalf("%s: %+v", req, a)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatalf("%s: %v", req, err)
		}
	})
}
