package privacy

import (
	"math"
	"slices"
)

// DefaultOrders returns the Rényi orders the accountant minimizes over
// when none are given, in increasing order: dp_accounting's
// DEFAULT_RDP_ORDERS (1.1, 1.2, …, 10.9, then 11, 12, …, 63, then 128,
// 256, 512 and 1024), which contain Opacus' default orders, and from 64
// to 1024 the orders round(64·2^(k/8)), so that no two neighbours are
// more than 10% apart anywhere in [1.1, 1024]. ε with these orders
// is never larger than with either library's defaults; docs/privacy.md
// reports how much a much denser grid gains (a few percent at most).
func DefaultOrders() []float64 {
	orders := make([]float64, 0, 99+53+4+29)
	for x := 1; x < 100; x++ {
		orders = append(orders, 1+float64(x)/10)
	}
	for a := 11; a < 64; a++ {
		orders = append(orders, float64(a))
	}
	orders = append(orders, 128, 256, 512, 1024)
	for k := 0; k < 32; k++ {
		if k == 0 || k%8 != 0 {
			orders = append(orders, math.Round(64*math.Pow(2, float64(k)/8)))
		}
	}
	slices.Sort(orders)
	return orders
}
