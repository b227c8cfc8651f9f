package interp

import (
	"slices"
	"sync"

	"github.com/fibergen/fibergen/ir"
)

// scalarTrack computes the scalars (ir.Func.Scalars) at a step: from their
// initial values, the scalar step block once per step. The values are a
// function of the hypers and t, so it remembers the last setting and step
// and advances from there, O(1) per step when steps come in order, and
// starts over for an earlier step or other hypers. It is safe for
// concurrent use.
type scalarTrack struct {
	init, step *code
	mu         sync.Mutex
	h          []float64 // the hypers of vals
	t          int       // the step of vals; -1: the initial values
	vals       []float64
}

func newScalarTrack(fn *ir.Func) (*scalarTrack, error) {
	if fn.ScalarInit == nil {
		return nil, nil
	}
	init, err := compile(fn, fn.ScalarInit)
	if err != nil {
		return nil, err
	}
	step, err := compile(fn, fn.ScalarStep)
	return &scalarTrack{init: init, step: step}, err
}

// at returns the scalars' values at step t (t = -1: the initial values).
func (s *scalarTrack) at(h []float64, t int) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil || t < s.t || !slices.Equal(h, s.h) {
		s.h, s.t, s.vals = slices.Clone(h), -1, stores(s.init, s.init.hostWith(h, 0, 0, nil))
	}
	for s.t < t {
		s.t++
		s.vals = stores(s.step, s.step.hostWith(h, s.t, 0, s.vals))
	}
	return slices.Clone(s.vals)
}

// stores returns the values a scalar block stores, in Func.Scalars order.
func stores(c *code, r regs) []float64 {
	out := make([]float64, len(c.kernelPart))
	for _, in := range c.kernelPart {
		out[in.slot] = r.f64[in.a]
	}
	return out
}

// Scalars returns the scalars' values at step t (in Func.Scalars order)
// for hypers h; nil without scalars.
func (p *Program) Scalars(h []float64, t int) []float64 {
	if p.step.scalars == nil {
		return nil
	}
	return p.step.scalars.at(h, t)
}
