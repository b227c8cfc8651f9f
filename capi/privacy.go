package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// schedule is a training run as fg_set_budget and fg_privacy take it.
type schedule struct {
	DatasetSize int     `json:"dataset_size"`
	BatchSize   int     `json:"batch_size"`
	Epochs      float64 `json:"epochs"`
	Delta       float64 `json:"delta"`      // 0: 1/N^1.1
	Sampling    string  `json:"sampling"`   // "poisson" (default), "fixed" or "cyclic"
	Accountant  string  `json:"accountant"` // "pld" (default) or "rdp"
}

func (s schedule) schedule() (privacy.Schedule, error) {
	out := privacy.Schedule{DatasetSize: s.DatasetSize, BatchSize: s.BatchSize, Epochs: s.Epochs, Delta: s.Delta}
	var err error
	if s.Sampling != "" {
		if out.Sampling, err = privacy.ParseSampling(s.Sampling); err != nil {
			return out, err
		}
	}
	if s.Accountant != "" {
		out.Accounting, err = privacy.ParseAccounting(s.Accountant)
	}
	return out, err
}

// budget is fg_set_budget's request.
type budget struct {
	schedule
	Epsilon float64 `json:"epsilon"`
	Clip    float64 `json:"clip"`
	// ClipGroups and ProportionalNoise clip per group instead of Clip.
	ClipGroups        []runtime.ClipGroup `json:"clip_groups"`
	ProportionalNoise bool                `json:"proportional_noise"`
}

// fg_set_budget calibrates the noise multiplier to the privacy target of
// the JSON object {"epsilon", "delta", "clip", "dataset_size",
// "batch_size", "epochs", "sampling", "accountant"} ("clip_groups" and
// "proportional_noise" in place of "clip" clip per group, as
// fg_set_dp_groups)
// (runtime.Optimizer.SetBudget), sets
// the DP settings with it and stores σ_DP in *sigma; from then on the
// optimizer refuses steps past the schedule.
//
//export fg_set_budget
func fg_set_budget(h C.int64_t, request *C.char, sigma *C.double, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("set_budget", unsafe.Pointer(sigma)); e != nil {
			return e
		}
		var b budget
		if e := decodeJSON("budget", C.GoString(request), &b); e != nil {
			return e
		}
		s, e := b.schedule.schedule()
		if e != nil {
			return e
		}
		v, e := o.SetBudget(runtime.Budget{Epsilon: b.Epsilon, Delta: b.Delta, ClipNorm: b.Clip, Schedule: s,
			Groups: b.ClipGroups, ProportionalNoise: b.ProportionalNoise})
		*sigma = C.double(v)
		return e
	})
}

// query is fg_privacy's request: a schedule and sigma (the ε it spends
// is asked), epsilon (the smallest σ meeting it is asked) or both (the δ
// of that ε at that σ is asked).
type query struct {
	schedule
	Sigma   float64 `json:"sigma"`
	Epsilon float64 `json:"epsilon"`
}

// answer is fg_privacy's reply.
type answer struct {
	Sigma      float64 `json:"sigma"`
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	Order      float64 `json:"order"` // the Rényi order under RDP, 0 under PLD
	Steps      int     `json:"steps"`
	Accountant string  `json:"accountant"`
}

// fg_privacy answers a privacy question with fibergen's accountant
// (package privacy), without an optimizer: given the JSON object of a
// training run and "sigma", the (ε, δ) it spends; given "epsilon" instead,
// the smallest σ that meets it; given both, the δ of that ε at that σ
// (Plan.DeltaAt, its order 0). It stores the JSON answer {"sigma",
// "epsilon", "delta", "order", "steps", "accountant"} in *out (free it
// with fg_free).
//
//export fg_privacy
func fg_privacy(request *C.char, out **C.char, err *C.char, errlen C.size_t) C.int {
	return status(jsonAnswer("privacy", out, func() (any, error) {
		return answerQuery(C.GoString(request))
	}), err, errlen)
}

func answerQuery(request string) (answer, error) {
	var q query
	if err := decodeJSON("privacy query", request, &q); err != nil {
		return answer{}, err
	}
	if !(q.Sigma > 0) && !(q.Epsilon > 0) {
		return answer{}, fmt.Errorf("fibergen: privacy query: give sigma > 0 (for the ε spent), epsilon > 0 (for the σ needed) or both (for the δ of that ε)")
	}
	s, err := q.schedule.schedule()
	if err != nil {
		return answer{}, err
	}
	p, err := s.Plan()
	if err != nil {
		return answer{}, err
	}
	a := answer{Sigma: q.Sigma, Steps: p.Steps, Accountant: p.Accounting.String()}
	var g privacy.Guarantee
	switch {
	case q.Sigma > 0 && q.Epsilon > 0:
		a.Epsilon = q.Epsilon
		a.Delta, err = p.DeltaAt(q.Sigma, q.Epsilon)
		return a, err
	case q.Epsilon > 0:
		a.Sigma, g, err = p.Sigma(q.Epsilon)
	default:
		g, err = p.Epsilon(q.Sigma)
	}
	a.Epsilon, a.Delta, a.Order = g.Epsilon, g.Delta, g.Order
	return a, err
}
