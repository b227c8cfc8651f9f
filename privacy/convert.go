package privacy

import (
	"errors"
	"fmt"
	"math"
)

// Guarantee is an (ε, δ)-DP guarantee and, from RDP, the Rényi order it
// comes from (0 from PLD).
type Guarantee struct {
	Epsilon float64
	Delta   float64
	Order   float64
}

// EpsilonFromRDP converts RDP values rdp[i] at orders[i] into the smallest
// ε, over the orders, of an (ε, delta)-DP guarantee, by the conversion of
// Balle, Barthe, Gaboardi, Hsu and Sato 2020 ("Hypothesis testing
// interpretations and Rényi differential privacy", AISTATS; Theorem 21 of
// arXiv:1905.09982), as dp_accounting's compute_epsilon and Opacus'
// get_privacy_spent compute it:
//
//	ε(α) = rdp + log(1 - 1/α) - (log δ + log α)/(α - 1),
//
// taken only for α > 1.01 (below, it is numerically unstable and never
// the best); an order whose RDP is so small that δ² > 1 - e^-rdp gives
// ε = 0 (by the KL bound δ <= √(1 - e^-KL)). The order returned is the
// first that attains the minimum; ε is clamped at 0.
func EpsilonFromRDP(orders, rdp []float64, delta float64) (Guarantee, error) {
	if err := checkConversion(orders, rdp, delta); err != nil {
		return Guarantee{}, err
	}
	best := Guarantee{Epsilon: math.Inf(1), Delta: delta, Order: orders[0]}
	for i, a := range orders {
		if e := epsilonAt(a, rdp[i], delta); e < best.Epsilon {
			best.Epsilon, best.Order = e, a
		}
	}
	best.Epsilon = max(best.Epsilon, 0)
	return best, nil
}

// DeltaFromRDP is EpsilonFromRDP's conversion solved for δ at ε = eps,
// minimized over the orders (α > 1.01):
//
//	log δ(α) = (α - 1)·(rdp - eps + log(1 - 1/α)) - log α,
//
// capped at 1.
func DeltaFromRDP(orders, rdp []float64, eps float64) float64 {
	best := 0.0 // log δ
	for i, a := range orders {
		if a > 1.01 {
			best = min(best, (a-1)*(rdp[i]-eps+math.Log1p(-1/a))-math.Log(a))
		}
	}
	return math.Exp(best)
}

// epsilonAt is ε(α) of EpsilonFromRDP for one order.
func epsilonAt(alpha, rdp, delta float64) float64 {
	switch {
	case delta*delta+math.Expm1(-rdp) > 0:
		return 0
	case alpha > 1.01:
		return rdp + math.Log1p(-1/alpha) - (math.Log(delta)+math.Log(alpha))/(alpha-1)
	}
	return math.Inf(1)
}

// checkConversion checks the arguments of EpsilonFromRDP.
func checkConversion(orders, rdp []float64, delta float64) error {
	switch {
	case len(orders) == 0:
		return errors.New("no orders")
	case len(orders) != len(rdp):
		return fmt.Errorf("%d orders but %d RDP values", len(orders), len(rdp))
	case !(delta > 0 && delta < 1):
		return fmt.Errorf("delta %v: want a value in (0, 1)", delta)
	}
	for i, a := range orders {
		if !(a > 1) || math.IsInf(a, 0) {
			return fmt.Errorf("order %v: want a finite order > 1", a)
		}
		if !(rdp[i] >= 0) {
			return fmt.Errorf("RDP %v at order %v: want a value >= 0", rdp[i], a)
		}
	}
	return nil
}
