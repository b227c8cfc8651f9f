package corrnoise

import "math"

// problem is one design's setting: its loss is that of the BLT pair that
// a parameter vector decodes to. r and c are scratch for the strategy's
// and the noise filter's coefficients.
type problem struct {
	n, b      int
	objective Objective
	r, c      []float64
}

// newProblem returns the problem of n steps, minimum separation b.
func newProblem(n, b int, o Objective) *problem {
	return &problem{n: n, b: b, objective: o, r: make([]float64, n), c: make([]float64, n)}
}

// loss returns log(sens² × error) of the pair x decodes to, +Inf where
// the decays do not give a pair (two too close).
func (p *problem) loss(x []float64) float64 { return p.lossOf(decode(x)) }

// lossOf returns log(sens² × error) of the pair of the decays θ and θ̂.
func (p *problem) lossOf(theta, thetaHat []float64) float64 {
	strategy, noise, err := PairFromDecays(theta, thetaHat)
	if err != nil {
		return math.Inf(1)
	}
	fillCoefficients(p.r, strategy)
	fillCoefficients(p.c, noise)
	sens2 := stridedSquares(p.r, p.b)
	mx, mean := Error(p.c, p.n)
	e := mx
	if p.objective == Mean {
		e = mean
	}
	v := math.Log(sens2 * e)
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
}

// fillCoefficients writes the first len(c) coefficients of b into c.
func fillCoefficients(c []float64, b BLT) {
	p := append([]float64(nil), b.Weight...)
	c[0] = 1
	for l := 1; l < len(c); l++ {
		var s float64
		for i, t := range b.Decay {
			s += p[i]
			p[i] *= t
		}
		c[l] = s
	}
}

// stridedSquares returns ‖Σ_{j<k} C_{:,jb}‖², C the Toeplitz matrix of r,
// summing the strided columns (strided) into r in place.
func stridedSquares(r []float64, b int) float64 {
	var s float64
	for t := range r {
		if t >= b {
			r[t] += r[t-b]
		}
		s += r[t] * r[t]
	}
	return s
}

// maxDecay caps the decays of a design: the noise filter is rounded to
// float32, whose spacing below 1 is 6e-8, and its strategy's decays move
// with it; a design at 1 − 1e-6 stays below 1 once rounded.
const maxDecay = 1 - 1e-6

// minDecay is the least decay of a design: a decay must be positive
// (BLT.Validate), and one the search drives to 0 stays a float32 above it.
const minDecay = 1e-6

// decode maps x ∈ R^{2d} to interlaced decays v_k = minDecay + (maxDecay −
// minDecay)·σ(l_k), l_0 = x_0 and l_k = l_{k−1} − e^{x_k}, so maxDecay >
// v_0 > v_1 > … > minDecay, and
// θ_i = v_{2i}, θ̂_i = v_{2i+1}.
func decode(x []float64) (theta, thetaHat []float64) {
	d := len(x) / 2
	theta, thetaHat = make([]float64, d), make([]float64, d)
	logit := x[0]
	for k := range x {
		if k > 0 {
			logit -= math.Exp(x[k])
		}
		v := minDecay + (maxDecay-minDecay)/(1+math.Exp(-logit))
		if k%2 == 0 {
			theta[k/2] = v
		} else {
			thetaHat[k/2] = v
		}
	}
	return theta, thetaHat
}

// encode is decode's inverse for strictly decreasing v in (minDecay, maxDecay).
func encode(v []float64) []float64 {
	x := make([]float64, len(v))
	prev := 0.0
	for k, vk := range v {
		u := (vk - minDecay) / (maxDecay - minDecay)
		l := math.Log(u / (1 - u))
		if k == 0 {
			x[0] = l
		} else {
			x[k] = math.Log(prev - l)
		}
		prev = l
	}
	return x
}

// starts returns the fixed starting points of the search: 2d decays with
// 1 − v log-spaced from lo/n to hi, for a few spans (lo/n capped below hi).
func starts(n, d int) [][]float64 {
	var xs [][]float64
	for _, s := range [][2]float64{{1, 0.5}, {0.2, 0.3}, {4, 0.8}, {0.05, 0.05}} {
		lo, hi := math.Log(math.Min(s[0]/float64(n), s[1]/2)), math.Log(s[1])
		v := make([]float64, 2*d)
		for k := range v {
			f := float64(k) / float64(len(v)-1)
			v[k] = 1 - math.Exp(lo+f*(hi-lo))
		}
		xs = append(xs, encode(v))
	}
	return xs
}

// search runs Nelder–Mead from every start, restarts from the best point
// until a restart no longer improves it, and returns the best point.
func search(p *problem, d int) ([]float64, float64) {
	best, fbest := []float64(nil), math.Inf(1)
	budget := 200 * 2 * d
	for _, x0 := range starts(p.n, d) {
		x, f := nelderMead(p.loss, x0, 0.5, budget)
		if f < fbest {
			best, fbest = x, f
		}
	}
	for range 8 {
		x, f := nelderMead(p.loss, best, 0.25, budget)
		improved := fbest-f > 1e-9
		if f < fbest {
			best, fbest = x, f
		}
		if !improved {
			break
		}
	}
	return best, fbest
}
