package corrnoise

import "math"

// The dense float64 computations the tests hold the package to: matrices
// built entry by entry, no Toeplitz shortcut.

// toeplitzMatrix returns the n×n lower-triangular Toeplitz matrix of c.
func toeplitzMatrix(c []float64, n int) [][]float64 {
	m := zeros(n)
	for i := range n {
		for j := 0; j <= i; j++ {
			if i-j < len(c) {
				m[i][j] = c[i-j]
			}
		}
	}
	return m
}

// zeros returns an n×n zero matrix.
func zeros(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// ones returns A, the n×n all-ones lower triangle.
func ones(n int) [][]float64 {
	m := zeros(n)
	for i := range n {
		for j := 0; j <= i; j++ {
			m[i][j] = 1
		}
	}
	return m
}

// matMul returns a·b.
func matMul(a, b [][]float64) [][]float64 {
	m := zeros(len(a))
	for i := range a {
		for j := range b[0] {
			for k := range b {
				m[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return m
}

// gram returns CᵀC.
func gram(c [][]float64) [][]float64 {
	n := len(c)
	x := zeros(n)
	for i := range n {
		for j := range n {
			for t := range n {
				x[i][j] += c[t][i] * c[t][j]
			}
		}
	}
	return x
}

// lowerInverse inverts a lower-triangular matrix by forward substitution.
func lowerInverse(l [][]float64) [][]float64 {
	n := len(l)
	inv := zeros(n)
	for j := range n {
		for i := j; i < n; i++ {
			s := 0.0
			if i == j {
				s = 1
			}
			for k := j; k < i; k++ {
				s -= l[i][k] * inv[k][j]
			}
			inv[i][j] = s / l[i][i]
		}
	}
	return inv
}

// rowNorms2 returns the squared norm of each row of m.
func rowNorms2(m [][]float64) []float64 {
	r := make([]float64, len(m))
	for i, row := range m {
		for _, v := range row {
			r[i] += v * v
		}
	}
	return r
}

// patterns calls f with every non-empty set of steps of n at least b apart.
func patterns(n, b int, f func([]int)) {
	var rec func(start int, pi []int)
	rec = func(start int, pi []int) {
		for j := start; j < n; j++ {
			next := append(append([]int(nil), pi...), j)
			f(next)
			rec(j+b, next)
		}
	}
	rec(0, nil)
}

// bruteForce returns, over every pattern π, the largest Σ_{i,j∈π} X_ij
// (the sensitivity² where X ≥ 0: equal u_j maximise) and the largest
// sᵀX_π s over sign vectors s (contributions ±u of one unit vector, an
// achievable value, so a lower bound on the sensitivity² of any C).
func bruteForce(x [][]float64, n, b int) (allEqual, signs float64) {
	patterns(n, b, func(pi []int) {
		for mask := 0; mask < 1<<len(pi); mask++ {
			v := 0.0
			for a, i := range pi {
				for c, j := range pi {
					v += sign(mask, a) * sign(mask, c) * x[i][j]
				}
			}
			signs = math.Max(signs, v)
			if mask == 0 {
				allEqual = math.Max(allEqual, v)
			}
		}
	})
	return allEqual, signs
}

// sign is −1 where bit a of mask is set, else 1.
func sign(mask, a int) float64 {
	if mask&(1<<a) != 0 {
		return -1
	}
	return 1
}
