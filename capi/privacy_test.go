package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/fibergen/fibergen/privacy"
)

// TestAnswerQuery: fg_privacy's answers are the accountant's, both ways.
func TestAnswerQuery(t *testing.T) {
	s := privacy.Schedule{DatasetSize: 60000, BatchSize: 256, Epochs: 10}
	sigma, err := s.SigmaFor(3)
	if err != nil {
		t.Fatal(err)
	}
	a, err := answerQuery(`{"dataset_size": 60000, "batch_size": 256, "epochs": 10, "epsilon": 3}`)
	if err != nil || a.Sigma != sigma || a.Steps != s.Steps() || a.Epsilon > 3 {
		t.Errorf("sigma query: %+v, %v; want σ = %v", a, err, sigma)
	}
	b, err := answerQuery(`{"dataset_size": 60000, "batch_size": 256, "epochs": 10, "sigma": 1.1, "sampling": "fixed"}`)
	if err != nil || b.Sigma != 1.1 || !(b.Epsilon > 0) {
		t.Errorf("epsilon query: %+v, %v", b, err)
	}
	for _, bad := range []string{`{}`, `{"sigma": 1, "epsilon": 1}`, `{"sigma": 1, "dataset_size": 10, "batch_size": 20, "epochs": 1}`,
		`{"sigma": 1, "colour": 2}`, `{"sigma": 1, "dataset_size": 10, "batch_size": 2, "epochs": 1, "sampling": "round"}`, `[`} {
		if _, err := answerQuery(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// FuzzAnswerQuery: any request gets an answer or an error, never a panic,
// and an answer is finite and marshals.
func FuzzAnswerQuery(f *testing.F) {
	f.Add(`{"dataset_size": 60000, "batch_size": 256, "epochs": 10, "epsilon": 3}`)
	f.Add(`{"dataset_size": 100, "batch_size": 100, "epochs": 0.5, "sigma": 0.5, "sampling": "fixed", "delta": 1e-3}`)
	f.Fuzz(func(t *testing.T, req string) {
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
