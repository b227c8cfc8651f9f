package runtime

import (
	"slices"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/rng"
)

// IssueScales makes scales the last ClipScales returned, at this step
// and observation, as if computed from the examples' norms: the tests that
// hold a privatization given scales to one that computed them, bit for bit,
// give it the computed ones, which ClipScales' float64 norms need not give
// back exactly.
func (o *Optimizer) IssueScales(scales []float32) {
	defer o.lock()()
	o.ghost = &ghostScales{scales: slices.Clone(scales), t: o.t, a: o.observation().A}
}

// LockFree reports whether o's lock is free at this moment: the tests'
// probe of what a call holds it for.
func LockFree(o *Optimizer) bool {
	if !o.mu.TryLock() {
		return false
	}
	o.mu.Unlock()
	return true
}

// BudgetAccountant returns the accountant of o's budget, nil without one.
func BudgetAccountant(o *Optimizer) privacy.Accountant {
	acc, _ := o.budgetAt()
	return acc
}

// StreamBuffers returns s's buffers: the destination, then the sources.
func StreamBuffers(s *HostStream) [3][]float32 { return s.bufs }

// SetRandomKey replaces the source of Open's secure keys until restore.
func SetRandomKey(f func() (rng.Key, error)) (restore func()) {
	old := randomKey
	randomKey = f
	return func() { randomKey = old }
}
