package privacy

import "math"

// Accountant reports the ε spent by a number of steps of one mechanism.
// It computes the mechanism's RDP at every order once; each report is
// then a scaling and a minimum over the orders.
type Accountant struct {
	orders []float64
	step   []float64 // RDP of one step at each order
	delta  float64
}

// NewAccountant returns an Accountant for mechanism m, target delta and
// the orders (nil: DefaultOrders).
func NewAccountant(m Mechanism, delta float64, orders []float64) (*Accountant, error) {
	if orders == nil {
		orders = DefaultOrders()
	}
	step, err := m.RDP(orders)
	if err != nil {
		return nil, err
	}
	if err := checkConversion(orders, step, delta); err != nil {
		return nil, err
	}
	return &Accountant{orders: append([]float64(nil), orders...), step: step, delta: delta}, nil
}

// EpsilonAfter returns the (ε, δ) guarantee after steps steps: RDP
// composes additively, so the RDP at each order is steps times one
// step's, converted by EpsilonFromRDP. No step spends nothing.
func (a *Accountant) EpsilonAfter(steps int) Guarantee {
	best := Guarantee{Epsilon: math.Inf(1), Delta: a.delta, Order: a.orders[0]}
	if steps <= 0 {
		best.Epsilon = 0
		return best
	}
	for i, alpha := range a.orders {
		if e := epsilonAt(alpha, float64(steps)*a.step[i], a.delta); e < best.Epsilon {
			best.Epsilon, best.Order = e, alpha
		}
	}
	best.Epsilon = max(best.Epsilon, 0)
	return best
}
