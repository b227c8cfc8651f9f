package corrnoise

import (
	"math"
	"sort"
)

// simplex is Nelder–Mead's working set: m+1 points and their values.
type simplex struct {
	x [][]float64
	f []float64
}

// nelderMead minimises f from x0 with the adaptive coefficients of Gao &
// Han (2012), an initial simplex of the given step along each axis, until
// the values agree to 1e-12 or maxEval evaluations are spent.
func nelderMead(f func([]float64) float64, x0 []float64, step float64, maxEval int) ([]float64, float64) {
	m := len(x0)
	s := simplex{x: make([][]float64, m+1), f: make([]float64, m+1)}
	for i := range s.x {
		s.x[i] = append([]float64(nil), x0...)
		if i > 0 {
			s.x[i][i-1] += step
		}
		s.f[i] = f(s.x[i])
	}
	for evals := m + 1; evals < maxEval; {
		s.sort()
		if s.f[m]-s.f[0] <= 1e-12*(1+math.Abs(s.f[0])) {
			break
		}
		evals += s.step(f)
	}
	s.sort()
	return s.x[0], s.f[0]
}

// sort orders the points by value, best first.
func (s *simplex) sort() { sort.Sort(s) }

func (s *simplex) Len() int { return len(s.f) }
func (s *simplex) Less(i, j int) bool {
	return s.f[i] < s.f[j] || (!math.IsNaN(s.f[i]) && math.IsNaN(s.f[j]))
}
func (s *simplex) Swap(i, j int) {
	s.x[i], s.x[j] = s.x[j], s.x[i]
	s.f[i], s.f[j] = s.f[j], s.f[i]
}

// step is one Nelder–Mead iteration on a sorted simplex: reflect the worst
// point, expand, contract or shrink. It returns the evaluations spent.
func (s *simplex) step(f func([]float64) float64) int {
	m := len(s.x) - 1
	fm := float64(m)
	beta, gamma := 1+2/fm, 0.75-1/(2*fm)
	c := s.centroid()
	xr := affine(c, s.x[m], -1)
	fr := f(xr)
	switch {
	case fr < s.f[0]:
		xe := affine(c, s.x[m], -beta)
		if fe := f(xe); fe < fr {
			s.x[m], s.f[m] = xe, fe
		} else {
			s.x[m], s.f[m] = xr, fr
		}
		return 2
	case fr < s.f[m-1]:
		s.x[m], s.f[m] = xr, fr
		return 1
	}
	return 1 + s.contract(f, c, xr, fr, gamma)
}

// contract tries the contraction on the side of the better of the
// reflected and the worst point, and shrinks towards the best point if it
// fails. It returns the evaluations spent.
func (s *simplex) contract(f func([]float64) float64, c, xr []float64, fr, gamma float64) int {
	m := len(s.x) - 1
	xc := affine(c, s.x[m], gamma)
	limit := s.f[m]
	if fr < s.f[m] {
		xc, limit = affine(c, s.x[m], -gamma), fr
	}
	if fc := f(xc); fc <= limit {
		s.x[m], s.f[m] = xc, fc
		return 1
	}
	delta := 1 - 1/float64(m)
	for i := 1; i <= m; i++ {
		s.x[i] = affine(s.x[0], s.x[i], delta)
		s.f[i] = f(s.x[i])
	}
	return 1 + m
}

// centroid returns the mean of every point but the worst.
func (s *simplex) centroid() []float64 {
	m := len(s.x) - 1
	c := make([]float64, len(s.x[0]))
	for _, x := range s.x[:m] {
		for j, v := range x {
			c[j] += v / float64(m)
		}
	}
	return c
}

// affine returns c + t(x − c).
func affine(c, x []float64, t float64) []float64 {
	y := make([]float64, len(c))
	for j := range c {
		y[j] = c[j] + t*(x[j]-c[j])
	}
	return y
}
