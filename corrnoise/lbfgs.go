package corrnoise

import "math"

// lbfgsMemory is the number of steps the search remembers.
const lbfgsMemory = 12

// lbfgsIterations caps the search.
const lbfgsIterations = 20000

// lbfgsStall is the relative decrease of the loss below which an
// iteration counts as stalled; three in a row end the search.
const lbfgsStall = 1e-14

// step is one remembered step s and change of gradient y, ρ = 1/sᵀy.
type step struct {
	s, y []float64
	rho  float64
}

// lbfgs minimises tr(AᵀA X⁻¹) from the feasible x over the constraints'
// affine space: limited-memory BFGS (Nocedal & Wright 2006, Algorithm
// 7.4) on projected gradients, every direction in the tangent space, with
// a backtracking line search that keeps X positive definite. It returns
// the X reached and the iterations run, at most limit.
func lbfgs(e epochs, x []float64, limit int) ([]float64, int) {
	f, h, _ := e.evaluate(x)
	g := e.gradient(h)
	var mem []step
	stalled, it := 0, 0
	for it < limit && stalled < 3 {
		it++
		xn, fn, hn, ok := e.lineSearch(x, f, g, direction(g, mem, x))
		if !ok {
			if mem == nil {
				break
			}
			mem = nil
			continue
		}
		gn := e.gradient(hn)
		s, y := difference(xn, x), difference(gn, g)
		if sy := dot(s, y); sy > 0 {
			mem = append(mem, step{s, y, 1 / sy})
			if len(mem) > lbfgsMemory {
				mem = mem[1:]
			}
		}
		if f-fn < lbfgsStall*f {
			stalled++
		} else {
			stalled = 0
		}
		x, f, g = xn, fn, gn
	}
	return x, it
}

// direction returns −Hg by the two-loop recursion, H the inverse Hessian
// the steps imply, scaled by the last sᵀy/yᵀy; with no step, −g scaled
// to a hundredth of x's norm.
func direction(g []float64, mem []step, x []float64) []float64 {
	q := append([]float64(nil), g...)
	if len(mem) == 0 {
		scale(q, -0.01*math.Sqrt(sumSquares(x)/sumSquares(g)))
		return q
	}
	alpha := make([]float64, len(mem))
	for i := len(mem) - 1; i >= 0; i-- {
		alpha[i] = mem[i].rho * dot(mem[i].s, q)
		axpy(q, -alpha[i], mem[i].y)
	}
	last := mem[len(mem)-1]
	scale(q, 1/(last.rho*sumSquares(last.y)))
	for i := range mem {
		beta := mem[i].rho * dot(mem[i].y, q)
		axpy(q, alpha[i]-beta, mem[i].s)
	}
	scale(q, -1)
	return q
}

// lineSearch returns x + αd at the first α of 1, ½, ¼, … where X is
// positive definite and the loss falls by at least 10⁻⁴ α gᵀd (Armijo);
// ok false where none of 60 does.
func (e epochs) lineSearch(x []float64, f float64, g, d []float64) (xn []float64, fn float64, h []float64, ok bool) {
	slope := dot(g, d)
	if !(slope < 0) {
		return nil, 0, nil, false
	}
	xn = make([]float64, len(x))
	alpha := 1.0
	for range 60 {
		for i := range x {
			xn[i] = x[i] + alpha*d[i]
		}
		if fn, h, ok = e.evaluate(xn); ok && fn <= f+1e-4*alpha*slope {
			return xn, fn, h, true
		}
		alpha /= 2
	}
	return nil, 0, nil, false
}

// difference returns a − b.
func difference(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// scale multiplies x by a.
func scale(x []float64, a float64) {
	for i := range x {
		x[i] *= a
	}
}
