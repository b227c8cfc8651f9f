package interp

import (
	"fmt"
	"slices"
	"sync"

	"github.com/fibergen/fibergen/ir"
)

// scalarTrack computes the scalars (ir.Func.Scalars) at a step: from their
// initial values, the scalar step block once per step. The values are a
// function of the hypers, sigma_w2 and t (the host block may read sigma_w2
// and the attenuations, themselves functions of the hypers and t), so it
// remembers, per setting of the hypers and sigma_w2 (at most maxSettings,
// as gains), the last step asked for and advances from there:
// O(1) per step when the steps of each setting come in order, however the
// settings alternate (per-tensor hypers). An earlier step is computed from
// the start without forgetting the later one, so a check of step 0 costs
// O(1) and does not rewind a run. It is safe for concurrent use.
type scalarTrack struct {
	init, step *code
	mu         sync.Mutex
	last       map[string]*scalarsAt // by fmt.Sprint of the hypers
}

// scalarsAt is the scalars of one setting at step t (-1: the initial values).
type scalarsAt struct {
	t    int
	vals []float64
}

func newScalarTrack(fn *ir.Func, g *gains) (*scalarTrack, error) {
	if fn.ScalarInit == nil {
		return nil, nil
	}
	init, err := compile(fn, fn.ScalarInit)
	if err != nil {
		return nil, err
	}
	step, err := compile(fn, fn.ScalarStep)
	if err == nil {
		step.gains = g
	}
	return &scalarTrack{init: init, step: step, last: map[string]*scalarsAt{}}, err
}

// at returns the scalars' values at step t (t = -1: the initial values)
// with the noise variance sigmaW2.
func (s *scalarTrack) at(h []float64, t int, sigmaW2 float64) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprint(h, sigmaW2)
	last := s.last[key]
	if last == nil || t < last.t {
		start := &scalarsAt{t: -1, vals: stores(s.init, s.init.hostWith(h, 0, 0, nil, nil))}
		if last == nil {
			if len(s.last) >= maxSettings {
				clear(s.last)
			}
			s.last[key] = start
		}
		last = start
	}
	for last.t < t {
		last.t++
		last.vals = stores(s.step, s.step.hostWith(h, last.t, sigmaW2, last.vals, nil))
	}
	return slices.Clone(last.vals)
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
// for hypers h and noise variance sigmaW2; nil without scalars.
func (p *Program) Scalars(h []float64, t int, sigmaW2 float64) []float64 {
	if p.step.scalars == nil {
		return nil
	}
	return p.step.scalars.at(h, t, sigmaW2)
}
