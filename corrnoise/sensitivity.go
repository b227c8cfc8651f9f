package corrnoise

import (
	"fmt"
	"math"
	"strconv"
)

// Participations returns k = ⌈n/b⌉, the most steps of n that one example
// can take part in when two of its steps are at least b apart. n ≥ 1 and
// 1 ≤ b ≤ n (b = n: one participation).
func Participations(n, b int) (int, error) {
	switch {
	case n < 1:
		return 0, fmt.Errorf("corrnoise: the number of steps must be at least 1, got %d", n)
	case b < 1 || b > n:
		return 0, fmt.Errorf("corrnoise: the minimum separation must be in [1, %d] (the number of steps), got %d", n, b)
	}
	return (n + b - 1) / b, nil
}

// boundBudget caps the work (n²·k) of the Gram-matrix bound; above it
// Sensitivity uses the triangle inequality alone.
const boundBudget = 2e8

// Sensitivity returns the ℓ2 sensitivity of x ↦ C x over n steps, C the
// lower-triangular Toeplitz matrix of strategy (0 past its end), when an
// example contributes a vector of norm at most 1 to each step it takes
// part in, its steps at least b apart: the maximum over participation
// patterns π and unit vectors u_j of ‖Σ_{j∈π} C_{:,j} u_j‖.
//
// exact is true when the value is the sensitivity itself:
//   - one participation (k = 1): the largest column norm, column 0;
//   - coefficients non-negative and non-increasing: then C ≥ 0, so
//     X = CᵀC ≥ 0 and equal u_j maximise (Choquette-Choo et al. 2023,
//     multi-epoch MF, Sec. 2), and the pattern 0, b, 2b, … maximises
//     (Kalinin & Lampert 2024, "Banded Square Root Matrix Factorization
//     for Differentially Private Model Training", Theorem 2; used by
//     jax_privacy's toeplitz.minsep_sensitivity_squared).
//
// Otherwise it is an upper bound (exact false): the smaller of the
// triangle inequality Σ_{j<k} ‖C_{:,jb}‖ and, where n²k ≤ boundBudget,
// Algorithm 4 of Choquette-Choo et al. 2023, "(Amplified) Banded Matrix
// Factorization: A unified approach to private training" (the best
// pattern of each row of |X|, then the best pattern of those row values).
func Sensitivity(strategy []float64, n, b int) (sens float64, exact bool, err error) {
	k, err := Participations(n, b)
	if err != nil {
		return 0, false, err
	}
	r := padded(strategy, n)
	if err := checkFinite(r); err != nil {
		return 0, false, err
	}
	switch {
	case k == 1:
		return math.Sqrt(sumSquares(r)), true, nil
	case nonIncreasingNonNegative(r):
		return math.Sqrt(sumSquares(strided(r, b))), true, nil
	}
	return sensitivityBound(r, b, k), false, nil
}

// strided returns Σ_{j: jb ≤ t} r_{t−jb} for each t: the sum of the
// columns 0, b, 2b, … of the Toeplitz matrix of r.
func strided(r []float64, b int) []float64 {
	v := make([]float64, len(r))
	for t := range r {
		v[t] = r[t]
		if t >= b {
			v[t] += v[t-b]
		}
	}
	return v
}

// sensitivityBound is Sensitivity's upper bound where it is not exact.
func sensitivityBound(r []float64, b, k int) float64 {
	sq := make([]float64, len(r)+1) // sq[m] = Σ_{t<m} r_t²: ‖C_{:,j}‖² = sq[n−j]
	for t, x := range r {
		sq[t+1] = sq[t] + x*x
	}
	tri := 0.0
	for j := 0; j < k; j++ {
		tri += math.Sqrt(sq[len(r)-j*b])
	}
	n := float64(len(r))
	if n*n*float64(k) > boundBudget {
		return tri
	}
	return math.Min(tri, math.Sqrt(gramBound(r, b, k)))
}

// gramBound is Algorithm 4 of Choquette-Choo et al. 2023 (Amplified BandMF)
// on X = CᵀC: the best pattern of the values max_π Σ_{j∈π} |X_ij|.
func gramBound(r []float64, b, k int) float64 {
	n := len(r)
	rows := make([]float64, n)
	row := gramRow0(r)
	abs := make([]float64, n)
	for i := 0; i < n; i++ {
		for j := range row {
			abs[j] = math.Abs(row[j])
		}
		rows[i] = bestPattern(abs, b, k)
		nextGramRow(row, r, i)
	}
	return bestPattern(rows, b, k)
}

// gramRow0 returns row 0 of X = CᵀC: X_0j = Σ_{t≥j} r_t r_{t−j}.
func gramRow0(r []float64) []float64 {
	x := make([]float64, len(r))
	for j := range r {
		for t := j; t < len(r); t++ {
			x[j] += r[t] * r[t-j]
		}
	}
	return x
}

// nextGramRow turns row i of X = CᵀC into row i+1, in place, by
// X_{i+1,j+1} = X_{i,j} − r_{n−1−i} r_{n−1−j} and the symmetry of X.
func nextGramRow(row, r []float64, i int) {
	n := len(r)
	if i+1 >= n {
		return
	}
	for j := n - 1; j >= 1; j-- {
		row[j] = row[j-1] - r[n-1-i]*r[n-j]
	}
	row[0] = gramEntry(r, 0, i+1)
}

// gramEntry returns X_ij = Σ_{t ≥ max(i,j)} r_{t−i} r_{t−j}.
func gramEntry(r []float64, i, j int) float64 {
	var s float64
	for t := max(i, j); t < len(r); t++ {
		s += r[t-i] * r[t-j]
	}
	return s
}

// bestPattern returns max Σ_{j∈π} x_j over the sets π of at most k indices
// at least b apart (VecSens, Algorithm 3 of Choquette-Choo et al. 2023,
// Amplified BandMF): a dynamic program over the suffixes of x.
func bestPattern(x []float64, b, k int) float64 {
	n := len(x)
	f := make([]float64, n+b)
	g := make([]float64, n+b)
	for range k {
		for i := n - 1; i >= 0; i-- {
			g[i] = math.Max(x[i]+f[i+b], g[i+1])
		}
		f, g = g, f
	}
	return f[0]
}

// nonIncreasingNonNegative says whether r_0 ≥ r_1 ≥ … ≥ 0.
func nonIncreasingNonNegative(r []float64) bool {
	for i, x := range r {
		if x < 0 || (i > 0 && x > r[i-1]) {
			return false
		}
	}
	return true
}

// sumSquares returns Σ x_i².
func sumSquares(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return s
}

// checkFinite refuses a NaN or infinite coefficient.
func checkFinite(c []float64) error {
	for i, x := range c {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("corrnoise: coefficient %d is %v", i, x)
		}
	}
	return nil
}

// formatFloat spells x as the shortest decimal that reads back as x.
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
