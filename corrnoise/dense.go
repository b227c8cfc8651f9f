package corrnoise

import (
	"fmt"
	"math"
	"sync"
)

// DenseSteps is the most steps OptimalDense takes: each of its iterations
// is an n×n symmetric eigendecomposition.
const DenseSteps = 120

// Dense is the optimal dense factorization of the prefix sums under its
// participation for its objective, and its losses (sens² × error).
type Dense struct {
	Steps          int       `json:"steps"`
	MinSep         int       `json:"min_sep"`
	Participations int       `json:"participations"`
	Objective      Objective `json:"objective"`
	MeanLoss       float64   `json:"mean_loss"`
	// MaxLoss is the max loss of the factorization found for the max
	// objective (OptimalDenseEpochsMax), else 0.
	MaxLoss float64 `json:"max_loss,omitempty"`
	// LowerBound is a lower bound on the objective's loss of every
	// factorization under the participation (a dual value): the loss
	// minus LowerBound bounds how far the loss is from the optimum.
	LowerBound float64 `json:"lower_bound"`
	Iterations int     `json:"iterations"`
}

// denseParticipations is Participations(n, b) for the dense optima over
// fixed epochs, which refuse the numbers of steps checkDenseSteps does.
func denseParticipations(n, b int) (int, error) {
	k, err := Participations(n, b)
	if err == nil {
		err = checkDenseSteps(n)
	}
	return k, err
}

// checkDenseSteps refuses a number of steps the dense optima do not take.
func checkDenseSteps(n int) error {
	if n < 1 || n > DenseSteps {
		return fmt.Errorf("corrnoise: the dense optimum takes 1 to %d steps, got %d", DenseSteps, n)
	}
	return nil
}

// OptimalDense returns the factorization A = B C over n steps with one
// participation that minimises the mean error at unit sensitivity, over
// every C (not only Toeplitz): Denisov, McMahan, Rush, Smith & Thakurta
// 2022, "Improved Differential Privacy for SGD via Optimal Private Linear
// Operators on Adaptive Streams", the fixed point for X = CᵀC with
// diag(X) = 1. Writing G = AᵀA and Λ = diag(λ), the optimum is
// X = Λ^{-1/2} M Λ^{-1/2} with M = (Λ^{1/2} G Λ^{1/2})^{1/2}, at the λ with
// λ_i = M_ii; then tr(G X⁻¹) = tr M. The iteration λ ← diag(M) runs until
// diag(X) is within 1e-9 of 1; the loss reported is max_i X_ii · tr M / n,
// that of the X reached, so it never understates the optimum's loss. The
// lower bound is the dual value at λ, (tr M)²/(n Σλ) (epochs.bound with
// U = Λ).
func OptimalDense(n int) (Dense, error) {
	if err := checkDenseSteps(n); err != nil {
		return Dense{}, err
	}
	lambda := make([]float64, n)
	for i := range lambda {
		lambda[i] = 1
	}
	var diag []float64
	var trace float64
	it := 0
	for {
		it++
		diag, trace = sqrtDiag(scaledGram(lambda))
		if converged(diag, lambda) || it == 2000 {
			break
		}
		copy(lambda, diag)
	}
	worst, sum := 0.0, 0.0
	for i := range diag {
		worst = math.Max(worst, diag[i]/lambda[i])
		sum += lambda[i]
	}
	return Dense{Steps: n, MinSep: n, Participations: 1, Objective: Mean, MeanLoss: worst * trace / float64(n),
		LowerBound: trace * trace / (sum * float64(n)), Iterations: it}, nil
}

// converged says whether diag(X)_i = M_ii/λ_i is within 1e-9 of 1.
func converged(m, lambda []float64) bool {
	for i := range m {
		if math.Abs(m[i]/lambda[i]-1) > 1e-9 {
			return false
		}
	}
	return true
}

// scaledGram returns Λ^{1/2} AᵀA Λ^{1/2}: (AᵀA)_ij = n − max(i, j).
func scaledGram(lambda []float64) [][]float64 {
	n := len(lambda)
	s := make([][]float64, n)
	for i := range s {
		s[i] = make([]float64, n)
		for j := range s[i] {
			s[i][j] = float64(n-max(i, j)) * math.Sqrt(lambda[i]*lambda[j])
		}
	}
	return s
}

// sqrtDiag returns the diagonal and the trace of the square root of the
// symmetric positive semi-definite s (destroyed).
func sqrtDiag(s [][]float64) (diag []float64, trace float64) {
	q := jacobiEigen(s)
	n := len(s)
	diag = make([]float64, n)
	for k := range n {
		r := math.Sqrt(math.Max(s[k][k], 0))
		trace += r
		for i := range n {
			diag[i] += q[i][k] * q[i][k] * r
		}
	}
	return diag, trace
}

// jacobiEigen diagonalises the symmetric a in place by cyclic Jacobi
// rotations (Golub & Van Loan, Algorithm 8.5.3): a's diagonal ends as the
// eigenvalues, and the columns of the matrix returned are the
// eigenvectors.
func jacobiEigen(a [][]float64) [][]float64 {
	n := len(a)
	q := make([][]float64, n)
	for i := range q {
		q[i] = make([]float64, n)
		q[i][i] = 1
	}
	for range 100 {
		if offDiagonal(a) <= 1e-26*frobenius(a) {
			break
		}
		for p := 0; p < n-1; p++ {
			for r := p + 1; r < n; r++ {
				rotate(a, q, p, r)
			}
		}
	}
	return q
}

// rotate zeroes a[p][r] by a Jacobi rotation, applied to a on both sides
// and to the columns of q.
func rotate(a, q [][]float64, p, r int) {
	if a[p][r] == 0 {
		return
	}
	tau := (a[r][r] - a[p][p]) / (2 * a[p][r])
	t := 1 / (math.Abs(tau) + math.Sqrt(1+tau*tau))
	if tau < 0 {
		t = -t
	}
	c := 1 / math.Sqrt(1+t*t)
	s := t * c
	for k := range a {
		akp, akr := a[k][p], a[k][r]
		a[k][p], a[k][r] = c*akp-s*akr, s*akp+c*akr
	}
	for k := range a {
		apk, ark := a[p][k], a[r][k]
		a[p][k], a[r][k] = c*apk-s*ark, s*apk+c*ark
	}
	for k := range q {
		qkp, qkr := q[k][p], q[k][r]
		q[k][p], q[k][r] = c*qkp-s*qkr, s*qkp+c*qkr
	}
}

// offDiagonal returns the sum of the squares of a's off-diagonal entries.
func offDiagonal(a [][]float64) float64 {
	var s float64
	for i := range a {
		for j := range a[i] {
			if i != j {
				s += a[i][j] * a[i][j]
			}
		}
	}
	return s
}

// frobenius returns the sum of the squares of a's entries.
func frobenius(a [][]float64) float64 {
	var s float64
	for _, row := range a {
		s += sumSquares(row)
	}
	return s
}

// Loss returns the loss of its objective.
func (d Dense) Loss() float64 {
	if d.Objective == Max {
		return d.MaxLoss
	}
	return d.MeanLoss
}

// denseFor returns the dense optimum CompareDense gives a design of n
// steps at minimum separation b for the objective o, at most DenseSteps
// steps: OptimalDenseEpochs or OptimalDenseEpochsMax (b = n is one
// participation); else nil. The optima are deterministic and the max one
// takes seconds, so each is computed once a process (designs of 1…d
// buffers at one setting share it).
func denseFor(n, b int, o Objective) *Dense {
	optimum := OptimalDenseEpochs
	if o == Max {
		optimum = OptimalDenseEpochsMax
	}
	key := [3]int{n, b, int(o)}
	denseMemo.Lock()
	defer denseMemo.Unlock()
	d, ok := denseMemo.m[key]
	if !ok {
		var err error
		if d, err = optimum(n, b); err != nil {
			return nil
		}
		denseMemo.m[key] = d
	}
	return &d
}

// denseMemo holds the optima denseFor has computed.
var denseMemo = struct {
	sync.Mutex
	m map[[3]int]Dense
}{m: map[[3]int]Dense{}}
