package runtime

import (
	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/rng"
)

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
