package corrnoise

import (
	"math"
	"slices"
)

// OptimalDenseEpochs returns the factorization A = B C over n steps that
// minimises the mean error at unit sensitivity, over every C, when the
// example at position i < b of a cycle of b steps takes part in the steps
// i, i+b, i+2b, … < n: fixed-epoch (k, b)-participation, what cyclic
// sampling does, k = ⌈n/b⌉ (Choquette-Choo, McMahan, Rush & Thakurta 2023,
// "Multi-Epoch Matrix Factorization Mechanisms for Private Machine
// Learning"). b = n is one participation (OptimalDense's problem).
//
// It minimises tr(AᵀA X⁻¹) over X = CᵀC with X_ij = 0 where i ≠ j take
// part together (i ≡ j mod b) and Σ_{j≡i} X_jj = 1 for every i: then the
// sensitivity is exactly 1 for any contributions (the columns of a pattern
// are orthogonal). This is the structure the paper's optimum has and its
// released primal optimizer imposes. It loses nothing against any C (every
// BLT included): the LowerBound reported (epochs.bound, a dual value) holds
// for every C of unit sensitivity, and the loss found meets it to about
// 1e-11 relatively. The search is L-BFGS projected onto the constraints
// (lbfgs); the loss reported is that of the X reached, rescaled to unit
// sensitivity.
func OptimalDenseEpochs(n, b int) (Dense, error) {
	k, err := denseParticipations(n, b)
	if err != nil {
		return Dense{}, err
	}
	s := solveEpochs(n, b)
	return Dense{Steps: n, MinSep: b, Participations: k, Objective: Mean, MeanLoss: s.loss, LowerBound: s.bound, Iterations: s.iterations}, nil
}

// epochSolution is the X that solveEpochs reaches (row-major, n×n, unit
// sensitivity), its mean loss and the lower bound the dual gives.
type epochSolution struct {
	x                []float64
	loss, max, bound float64
	iterations       int
}

// epochs is the problem of n steps in cycles of b: the mean loss; with
// root, the mean loss weighted by root_i² on row i of the workload; with
// mu > 0, the smooth maximum of the rows' losses at μ
// (OptimalDenseEpochsMax).
type epochs struct {
	n, b int
	root []float64
	mu   float64
}

// solveEpochs runs the search and rescales its X to unit sensitivity.
func solveEpochs(n, b int) epochSolution {
	e := epochs{n: n, b: b}
	x, it := lbfgs(e, e.start(), lbfgsIterations)
	e.enforce(x)
	f, h, _ := e.evaluate(x)
	return epochSolution{x: x, loss: f / float64(n), bound: e.bound(h), iterations: it}
}

// together says whether the steps i and j are of one pattern.
func (e epochs) together(i, j int) bool { return (i-j)%e.b == 0 }

// start returns X = diag(1/|π|), π the pattern of each step: feasible.
func (e epochs) start() []float64 {
	x := make([]float64, e.n*e.n)
	for i := range e.n {
		x[i*e.n+i] = 1 / float64(e.size(i%e.b))
	}
	return x
}

// size returns the number of steps of the pattern of position i < b.
func (e epochs) size(i int) int { return (e.n - i + e.b - 1) / e.b }

// project maps a symmetric direction d onto the constraints' tangent
// space, in place: zero where two steps take part together, and each
// pattern's diagonal summing to 0.
func (e epochs) project(d []float64) {
	sum := e.zeroTogether(d)
	for i := range e.n {
		d[i*e.n+i] -= sum[i%e.b] / float64(e.size(i%e.b))
	}
}

// enforce puts x exactly on the constraints: zero where two steps take
// part together, then divided by its largest pattern diagonal sum, the
// sensitivity².
func (e epochs) enforce(x []float64) {
	worst := 0.0
	for _, s := range e.zeroTogether(x) {
		worst = math.Max(worst, s)
	}
	for i := range x {
		x[i] /= worst
	}
}

// zeroTogether zeroes x (n×n, row-major) where two steps take part
// together, in place, and returns each pattern's diagonal sum.
func (e epochs) zeroTogether(x []float64) []float64 {
	n := e.n
	sum := make([]float64, e.b)
	for i := range n {
		for j := range n {
			if i != j && e.together(i, j) {
				x[i*n+j] = 0
			}
		}
		sum[i%e.b] += x[i*n+i]
	}
	return sum
}

// evaluate returns tr(AᵀA X⁻¹) and H = X⁻¹Aᵀ (row-major), ok false where
// x is not positive definite. With X = LLᵀ, W = L⁻¹Aᵀ holds the running
// sums of L⁻¹'s columns (Aᵀ's column j is 1 on rows 0…j), tr(AᵀA X⁻¹) =
// ‖W‖², H = L⁻ᵀW. With weights, A is the workload with its row j scaled
// by root_j, and so is W's column j; with μ, the loss is the smooth
// maximum of W's columns' squared norms ℓ_j and column j is scaled by
// √softmax(ℓ/μ)_j, the loss's gradient being −HHᵀ still.
func (e epochs) evaluate(x []float64) (f float64, h []float64, ok bool) {
	n := e.n
	l, ok := cholesky(x, n)
	if !ok {
		return 0, nil, false
	}
	inv := lowerInverseFlat(l, n)
	w := runningSums(inv, n)
	f = e.weigh(w)
	h = make([]float64, n*n)
	for m := range n { // row i of H = (L⁻¹)ᵀW is Σ_{m≥i} (L⁻¹)_mi W_m
		for i := 0; i <= m; i++ {
			if c := inv[m*n+i]; c != 0 {
				axpy(h[i*n:i*n+n], c, w[m*n:m*n+n])
			}
		}
	}
	return f, h, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// weigh scales the columns of w = L⁻¹Aᵀ by the problem's weights, in
// place, and returns the loss.
func (e epochs) weigh(w []float64) float64 {
	n := e.n
	if e.mu > 0 {
		p, f := softmax(columnSquares(w, n), e.mu)
		scaleColumns(w, n, roots(1, p))
		return f
	}
	if e.root != nil {
		scaleColumns(w, n, e.root)
	}
	var f float64
	for i := range n {
		f += sumSquares(w[i*n : i*n+n])
	}
	return f
}

// runningSums returns the running sums of the rows of inv (n×n): L⁻¹Aᵀ
// from L⁻¹.
func runningSums(inv []float64, n int) []float64 {
	w := slices.Clone(inv)
	for i := range n {
		for j := 1; j < n; j++ {
			w[i*n+j] += w[i*n+j-1]
		}
	}
	return w
}

// columnSquares returns the squared norms of the columns of w (n×n).
func columnSquares(w []float64, n int) []float64 {
	sq := make([]float64, n)
	for i := range n {
		for j := range n {
			sq[j] += w[i*n+j] * w[i*n+j]
		}
	}
	return sq
}

// scaleColumns multiplies column j of w (n×n) by r_j, in place.
func scaleColumns(w []float64, n int, r []float64) {
	for i := range n {
		for j := range n {
			w[i*n+j] *= r[j]
		}
	}
}

// boundAt is the dual bound (bound) at x.
func (e epochs) boundAt(x []float64) float64 {
	_, h, _ := e.evaluate(x)
	return e.bound(h)
}

// gradient returns the gradient of tr(AᵀA X⁻¹), −HHᵀ, projected.
func (e epochs) gradient(h []float64) []float64 {
	n := e.n
	g := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := -dot(h[i*n:i*n+n], h[j*n:j*n+n])
			g[i*n+j], g[j*n+i] = v, v
		}
	}
	e.project(g)
	return g
}

// cholesky returns the lower-triangular L with LLᵀ = x (row-major), ok
// false where x is not positive definite.
func cholesky(x []float64, n int) ([]float64, bool) {
	l := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			s := x[i*n+j] - dot(l[i*n:i*n+j], l[j*n:j*n+j])
			if i == j {
				if !(s > 0) {
					return nil, false
				}
				l[i*n+i] = math.Sqrt(s)
			} else {
				l[i*n+j] = s / l[j*n+j]
			}
		}
	}
	return l, true
}

// lowerInverseFlat returns L⁻¹ of the lower-triangular l (row-major), row
// by row by forward substitution on the rows of L⁻¹L = I:
// (L⁻¹)_ij = (δ_ij − Σ_{j<m≤i} (L⁻¹)_im L_mj)/L_jj, for j from i down.
func lowerInverseFlat(l []float64, n int) []float64 {
	inv := make([]float64, n*n)
	for i := range n {
		r := inv[i*n : i*n+n]
		r[i] = 1 / l[i*n+i]
		for j := i - 1; j >= 0; j-- {
			var s float64
			for m := j + 1; m <= i; m++ {
				s += r[m] * l[m*n+j]
			}
			r[j] = -s / l[j*n+j]
		}
	}
	return inv
}

// dot returns Σ a_i b_i.
func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// axpy adds a·x to y.
func axpy(y []float64, a float64, x []float64) {
	for i := range y {
		y[i] += a * x[i]
	}
}

// bound returns the lower bound of the mean loss of every C with unit
// sensitivity under the participation, from H = X⁻¹Aᵀ: for a symmetric
// U ⪰ 0 that is zero between steps of different patterns and whose
// diagonal is a constant v_π over each pattern π, every C of unit
// sensitivity has tr(UX) ≤ Σ_π v_π (U's block on π is v_π times the Gram
// matrix of unit vectors u_j, and Σ_{i,j∈π} X_ij u_i·u_j = ‖Σ_j C_j u_jᵀ‖²
// ≤ 1), so tr(AᵀA X⁻¹) ≥ tr(AᵀA X⁻¹) + t tr(UX) − t Σv ≥ 2√t tr((AUAᵀ)^{1/2})
// − t Σv for every t > 0: at the best t, (tr (AUAᵀ)^{1/2})²/Σv. At the
// optimum U = X⁻¹AᵀAX⁻¹ = HHᵀ has that form and the bound is the loss;
// here U is HHᵀ between the steps of a pattern, each pattern's diagonal
// raised to its largest entry and then by the block's most negative
// eigenvalue, if any.
func (e epochs) bound(h []float64) float64 {
	n := e.n
	u := make([]float64, n*n)
	for i := range n {
		for j := range n {
			if e.together(i, j) {
				u[i*n+j] = dot(h[i*n:i*n+n], h[j*n:j*n+n])
			}
		}
	}
	var total float64
	for p := range e.b {
		total += e.raiseDiagonal(u, p)
	}
	m := prefixSandwich(u, n)
	if e.root != nil {
		for i := range m {
			for j := range m[i] {
				m[i][j] *= e.root[i] * e.root[j]
			}
		}
	}
	_, t := sqrtDiag(m)
	return t * t / (total * float64(n))
}

// raiseDiagonal sets the diagonal of pattern p's block of u to the one
// value that makes it positive semi-definite and at least its largest
// diagonal entry, and returns that value.
func (e epochs) raiseDiagonal(u []float64, p int) float64 {
	n := e.n
	var idx []int
	v := 0.0
	for i := p; i < n; i += e.b {
		idx = append(idx, i)
		v = math.Max(v, u[i*n+i])
	}
	block := make([][]float64, len(idx))
	for a, i := range idx {
		block[a] = make([]float64, len(idx))
		for c, j := range idx {
			block[a][c] = u[i*n+j]
		}
		block[a][a] = v
	}
	jacobiEigen(block)
	low := 0.0
	for a := range block {
		low = math.Min(low, block[a][a])
	}
	for _, i := range idx {
		u[i*n+i] = v - low
	}
	return v - low
}

// prefixSandwich returns A U Aᵀ, A the all-ones lower triangle: the
// running sums of u's rows, then of the result's columns.
func prefixSandwich(u []float64, n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = append([]float64(nil), u[i*n:i*n+n]...)
		if i > 0 {
			axpy(m[i], 1, m[i-1])
		}
	}
	for i := range m {
		for j := 1; j < n; j++ {
			m[i][j] += m[i][j-1]
		}
	}
	return m
}
