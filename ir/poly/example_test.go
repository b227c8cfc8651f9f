package poly_test

import (
	"fmt"

	"github.com/fibergen/fibergen/ir/poly"
)

// The stationary variance of an exponential moving average z ← (1-κ) z + κ g
// of unit-variance white noise g is κ/(2-κ).
func ExampleLyapunov() {
	k := poly.FracOf(poly.Var(0)) // κ
	one := poly.FracOf(poly.Int(1))
	m := [][]poly.Frac{{one.Sub(k)}}
	b := []poly.Frac{k}
	sigma, err := poly.Lyapunov(m, b, 100)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sigma[0][0])
	fmt.Println(sigma[0][0].Num, "|", sigma[0][0].Den)
	// Output:
	// x0/(2 - x0)
	// x0 | 2 - x0
}

// FiBeR's innovation filter, with state (gt, r) and gain ω, has squared ℓ2
// gain (2-ω)/(4-3ω).
func ExampleLyapunov_fiber() {
	w := poly.FracOf(poly.Var(0)) // ω
	one := poly.FracOf(poly.Int(1))
	m := [][]poly.Frac{
		{one.Sub(w), one.Sub(w)},
		{w.Neg(), one.Sub(w)},
	}
	sigma, err := poly.Lyapunov(m, []poly.Frac{w, w}, 100)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sigma[0][0])
	// Output:
	// (2 - x0)/(4 - 3*x0)
}

func ExampleGCD() {
	x0, x1 := poly.Var(0), poly.Var(1)
	p := x0.Add(x1).Mul(x0.Sub(poly.Int(2)))
	q := x0.Add(x1).Mul(x1.Add(poly.Int(3)))
	fmt.Println(poly.GCD(p, q))
	// Output:
	// x0 + x1
}
