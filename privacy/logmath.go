package privacy

import "math"

// Log-space arithmetic. A nonnegative number x is carried as log x, with
// -Inf for 0, so that terms like exp(α²/(2σ²)) never overflow.

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns log(e^a - e^b) for a >= b (-Inf when they are equal).
func logSub(a, b float64) float64 {
	switch {
	case math.IsInf(b, -1):
		return a
	case a <= b:
		return math.Inf(-1)
	case a-b > 1:
		return a + math.Log1p(-math.Exp(b-a))
	}
	return b + math.Log(math.Expm1(a-b))
}

// logSumExp returns log Σ e^x over xs, scaling by the largest term so
// that no exponential overflows and the largest term is exact.
func logSumExp(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// log1pExp returns log(1 + e^x) (the softplus), accurate for every x:
// log1p for small e^x, x + log1p(e^-x) for large x.
func log1pExp(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// logAbsExpm1 returns log|e^x - 1| (-Inf at x = 0), accurate near 0 and
// for large x, where e^x - 1 would overflow.
func logAbsExpm1(x float64) float64 {
	if x > 0 {
		return x + math.Log(-math.Expm1(-x))
	}
	return math.Log(-math.Expm1(x))
}

// logBinom returns log C(n, k) for integers 0 <= k <= n, by math.Lgamma.
func logBinom(n, k int) float64 {
	a, _ := math.Lgamma(float64(n) + 1)
	b, _ := math.Lgamma(float64(k) + 1)
	c, _ := math.Lgamma(float64(n-k) + 1)
	return a - b - c
}

// logErfc returns log erfc(x). math.Erfc is accurate to an ulp while its
// result is a normal float64, that is below x ≈ 26.5; from x = 25 on the
// asymptotic series of Abramowitz & Stegun 7.1.23,
//
//	erfc(x) = e^(-x²) / (x √π) · (1 + Σ_k (-1)^k (2k-1)!! / (2x²)^k),
//
// is summed while its terms shrink (at x >= 25 the first omitted term is
// below 1e-17 after five terms).
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	s, term := 0.0, 1.0
	for k := 1; k < 30; k++ {
		next := -term * float64(2*k-1) / (2 * x * x)
		if math.Abs(next) >= math.Abs(term) || math.Abs(next) < 1e-18 {
			break
		}
		term = next
		s += term
	}
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(s)
}
