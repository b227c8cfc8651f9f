package interp

import (
	"fmt"
	"sync"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir"
)

// gains computes the host's attenuation values, remembering them per
// model (the filter's M and b at the hypers in use, so that a schedule of
// other hypers does not start them over): the steady-state gains solved
// numerically (gain.SteadyGain) and the finite-time trackers (gain.FiniteGain),
// which must see the steps in order to cost O(k²) each. It keeps at most
// maxSettings models and is safe for concurrent use.
type gains struct {
	fn     *ir.Func
	mu     sync.Mutex
	steady map[string]float64
	finite map[string]*gain.FiniteGain
}

func newGains(fn *ir.Func) *gains {
	return &gains{fn: fn, steady: map[string]float64{}, finite: map[string]*gain.FiniteGain{}}
}

const maxSettings = 64

// model evaluates fl at h and returns M, b and a key for the setting; it
// forgets every setting when there are too many.
func (g *gains) model(fl *ir.Filter, h []float64) (m, b []float64, key string) {
	m, b = g.fn.FilterValues(fl, h)
	if len(g.steady)+len(g.finite) > maxSettings {
		clear(g.steady)
		clear(g.finite)
	}
	return m, b, fmt.Sprintf("%s %x %x", fl.State, m, b)
}

func (g *gains) steadyGain(fl *ir.Filter, h []float64) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, b, key := g.model(fl, h)
	a, ok := g.steady[key]
	if !ok {
		a = gain.SteadyGain(m, b, fl.Target)
		g.steady[key] = a
	}
	return a
}

func (g *gains) finiteGain(fl *ir.Filter, h []float64, t int) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, b, key := g.model(fl, h)
	tr := g.finite[key]
	if tr == nil {
		tr = gain.NewFiniteGain(m, b, fl.Target)
		g.finite[key] = tr
	}
	return tr.At(t)
}
