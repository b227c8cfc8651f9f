package privacy

import "math"

// Accounting is how an accountant bounds the privacy of composed steps.
type Accounting int

const (
	// PLD composes privacy loss distributions (PLDAccountant): the
	// tightest of the two, the default.
	PLD Accounting = iota
	// RDP composes Rényi differential privacy (RDPAccountant), as
	// Opacus' RDPAccountant and dp_accounting's RdpAccountant do.
	RDP
)

var accountingNames = names[Accounting]{"Accounting", "accountant", []string{PLD: "pld", RDP: "rdp"}}

func (a Accounting) String() string { return accountingNames.name(a) }

// ParseAccounting returns the Accounting named pld or rdp.
func ParseAccounting(name string) (Accounting, error) { return accountingNames.parse(name) }

// Accountant reports the (ε, δ) guarantee after a number of steps of one
// mechanism; no step spends nothing. Its methods may be called from
// several goroutines.
type Accountant interface {
	EpsilonAfter(steps int) Guarantee
}

// RDPAccountant reports the ε spent by a number of steps of one mechanism
// by RDP. It computes the mechanism's RDP at every order once; each
// report is then a scaling and a minimum over the orders.
type RDPAccountant struct {
	orders []float64
	step   []float64 // RDP of one step at each order
	delta  float64
}

// NewRDPAccountant returns an RDPAccountant for mechanism m, target delta
// and the orders (nil: DefaultOrders).
func NewRDPAccountant(m Mechanism, delta float64, orders []float64) (*RDPAccountant, error) {
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
	return &RDPAccountant{orders: append([]float64(nil), orders...), step: step, delta: delta}, nil
}

// EpsilonAfter returns the (ε, δ) guarantee after steps steps: RDP
// composes additively, so the RDP at each order is steps times one
// step's, converted by EpsilonFromRDP.
func (a *RDPAccountant) EpsilonAfter(steps int) Guarantee {
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
