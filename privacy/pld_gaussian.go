package privacy

import (
	"fmt"
	"math"
)

// The privacy loss distributions of one step of the subsampled Gaussian,
// discretised by "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar and
// Manurangsi 2022, "Connect the Dots: Tighter Discrete Approximations of
// Privacy Loss Distributions", PETS): the mass of the loss in each grid
// interval (a, b] is split between a and b so that both its P-mass and
// its Q-mass (E_P[e^-L]) are kept. The result is the PLD of a pair whose
// hockey-stick curve δ(ε) is the chord, in e^ε, of the exact one between
// grid points; δ is convex in e^ε, so the chord lies above it for every
// ε, negative ones included: the discrete pair dominates the exact one,
// and so does any composition of such pairs. Below the grid the mass is
// moved up to its lowest point; above it, it is split between its top
// point and +∞ the same way. Only the P-mass and Q-mass of loss intervals
// are needed, which the normal distribution function gives in closed form.

// gaussianPair is one dominating pair of the subsampled Gaussian with
// sensitivity 1 and noise σ: remove is P = (1-q)N(0,σ²) + qN(1,σ²),
// Q = N(0,σ²); add (remove false) is P = N(0,σ²), Q = that mixture.
type gaussianPair struct {
	q, sigma float64
	remove   bool
}

// lossTails returns P(L > l) and P(L <= l), Q(L > l) and Q(L <= l) for the
// privacy loss L = log(dP/dQ)(x), each from erfc so that small tails keep
// their relative precision.
func (g gaussianPair) lossTails(l float64) (sP, fP, sQ, fQ float64) {
	// remove: L = log(1-q + q·e^((2x-1)/(2σ²))) rises with x;
	// add: L is its negative and falls with x.
	u := l
	if !g.remove {
		u = -l
	}
	x := g.threshold(u)
	var above, below [2]float64 // N(0,σ²) and N(1,σ²) above and below x
	for k, mean := range [2]float64{0, 1} {
		z := (x - mean) / (g.sigma * math.Sqrt2)
		above[k], below[k] = math.Erfc(z)/2, math.Erfc(-z)/2
	}
	mixAbove := (1-g.q)*above[0] + g.q*above[1]
	mixBelow := (1-g.q)*below[0] + g.q*below[1]
	if g.remove { // L > l where x > threshold; P is the mixture
		return mixAbove, mixBelow, above[0], below[0]
	}
	return below[0], above[0], mixBelow, mixAbove // L > l where x < threshold
}

// threshold returns x with log(1-q + q·e^((2x-1)/(2σ²))) = u, or -Inf
// when no x gives u (u <= log(1-q): every x gives more).
func (g gaussianPair) threshold(u float64) float64 {
	// x = σ²·log((e^u - (1-q))/q) + 1/2, the logarithm as
	// log1p(expm1(u)/q) near u = 0 and as u + log1p(-(1-q)e^-u) - log q
	// for large u, where e^u overflows.
	s2 := g.sigma * g.sigma
	if u > 1 {
		return s2*(u+math.Log1p(-(1-g.q)*math.Exp(-u))-math.Log(g.q)) + 0.5
	}
	r := math.Expm1(u) / g.q
	if !(r > -1) {
		return math.Inf(-1)
	}
	return s2*math.Log1p(r) + 0.5
}

// loss returns the privacy loss at x of the remove pair (of the add pair,
// its negative).
func (g gaussianPair) loss(x float64) float64 {
	v := logAdd(math.Log1p(-g.q), math.Log(g.q)+(2*x-1)/(2*g.sigma*g.sigma))
	if g.remove {
		return v
	}
	return -v
}

// lossRange returns the losses beyond which P has at most tail on
// either side: the losses at P's quantiles tail and 1 - tail in x.
func (g gaussianPair) lossRange(tail float64) (lo, hi float64) {
	z := normalQuantileAbove(tail) * g.sigma
	if g.remove { // P is the mixture: below -z, above 1 + z
		return g.loss(-z), g.loss(1 + z)
	}
	return g.loss(z), g.loss(-z) // P = N(0,σ²); the loss falls with x
}

// normalQuantileAbove returns z with P(N(0,1) > z) = p for p in (0, 1/2]:
// Newton's method on log P(N > z), from √(-2 log p). (math.Erfcinv(2p)
// is 1 - 2p away from its pole, which rounds to it below p ≈ 1e-17.)
func normalQuantileAbove(p float64) float64 {
	logP := math.Log(p)
	z := math.Sqrt(-2 * logP)
	for range 50 {
		// d/dz log P(N > z) = -φ(z)/P(N > z)
		logTail := logErfc(z/math.Sqrt2) - math.Ln2
		hazard := math.Exp(-z*z/2 - 0.5*math.Log(2*math.Pi) - logTail)
		step := (logTail - logP) / hazard
		z += step
		if math.Abs(step) <= 1e-12*max(1, z) {
			break
		}
	}
	return z
}

// maxGridPoints bounds the grid of one step's PLD: a σ so small that its
// losses span more is out of the PLD accountant's reach.
const maxGridPoints = 1 << 22

// grid returns the indices ⌊lo/h⌋ and ⌈hi/h⌉ of the grid of spacing h
// that covers g's losses between P's quantiles tail and 1 - tail.
func (g gaussianPair) grid(h, tail float64) (int, int, error) {
	lo, hi := g.lossRange(tail)
	i, j := math.Floor(lo/h), math.Ceil(hi/h)
	if !(j-i < maxGridPoints) {
		return 0, 0, fmt.Errorf("the privacy loss of one step spans [%.4g, %.4g], more than %d points of %g: %w", lo, hi, maxGridPoints, h, ErrBeyondPLD)
	}
	return int(i), int(j), nil
}

// interval is what connect-the-dots keeps of the loss in one grid
// interval (a, a+h]: the P-mass that goes to a and to a+h.
type interval struct{ pa, pb float64 }

// split divides the interval's P-mass mP and Q-mass mQ between its ends
// a and a+h: pa + pb = mP, pa·e^-a + pb·e^-(a+h) = mQ. Rounding can
// leave the exact pb outside [0, mP] by a hair; it is clamped there.
func split(mP, mQ, a, h float64) interval {
	pb := (mP - scaleExp(mQ, a)) / -math.Expm1(-h)
	pb = min(mP, max(0, pb))
	return interval{mP - pb, pb}
}

// scaleExp returns m·e^a without overflow: 0 for m = 0, however large a
// (a Q-mass that underflowed sends its P-mass up, never to NaN), and
// e^(log m + a) otherwise.
func scaleExp(m, a float64) float64 {
	if m == 0 {
		return 0
	}
	return math.Exp(math.Log(m) + a)
}

// tails holds lossTails at each grid point.
type tails struct{ sP, fP, sQ, fQ []float64 }

func (g gaussianPair) tailsAt(lo, n int, h float64) tails {
	t := tails{make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)}
	for i := range n {
		t.sP[i], t.fP[i], t.sQ[i], t.fQ[i] = g.lossTails(float64(lo+i) * h)
	}
	return t
}

// mass returns the mass between grid points i and i+1 from the tail
// (above) or the distribution function (below), whichever is smaller and
// so carries the difference with less cancellation.
func mass(s, f []float64, i int) float64 {
	if s[i] < f[i+1] {
		return s[i] - s[i+1]
	}
	return f[i+1] - f[i]
}

// intervals splits the loss between consecutive grid points.
func (t tails) intervals(lo int, h float64) []interval {
	out := make([]interval, len(t.sP)-1)
	for i := range out {
		out[i] = split(mass(t.sP, t.fP, i), mass(t.sQ, t.fQ, i), float64(lo+i)*h, h)
	}
	return out
}

// dotsOn returns the connect-the-dots masses at grid points lo..hi from
// the loss between them, and the tails at the grid points.
func (g gaussianPair) dotsOn(lo, hi int, h float64) ([]float64, tails) {
	t := g.tailsAt(lo, hi-lo+1, h)
	p := make([]float64, hi-lo+1)
	for i, v := range t.intervals(lo, h) {
		p[i] += v.pa
		p[i+1] += v.pb
	}
	return p, t
}

// pld returns g's discretised PLD on the grid of spacing h that covers
// its losses between P's quantiles tail and 1 - tail.
func (g gaussianPair) pld(h, tail float64) (lossDist, error) {
	lo, hi, err := g.grid(h, tail)
	if err != nil {
		return lossDist{}, err
	}
	p, t := g.dotsOn(lo, hi, h)
	p[0] += t.fP[0] // everything at or below the lowest point
	return withTop(lossDist{h: h, lo: lo, p: p}, t).finite()
}

// withTop splits the mass above d's top point between it and +∞, where
// e^-L = 0, keeping its P-mass and Q-mass (t: the tails at the grid
// points that end at d's top).
func withTop(d lossDist, t tails) lossDist {
	n, k := len(d.p), len(t.sP)
	top := float64(d.lo+n-1) * d.h
	pTop := min(t.sP[k-1], scaleExp(t.sQ[k-1], top))
	d.p[n-1] += pTop
	d.inf = t.sP[k-1] - pTop
	return d
}

// fixedPLD returns the discretised PLD of one step of fixed-size sampling
// without replacement under replace-one adjacency, σ relative to the
// replace-one sensitivity. By Zhu, Dong and Wang 2022 ("Optimal
// Accounting of Differential Privacy via Characteristic Function",
// AISTATS, the dominating pairs of subsampling without replacement) its
// hockey-stick curve is at most the remove pair's for ε >= 0 and the add
// pair's for ε < 0, the larger of the two on either side; the two agree
// at 0 (q times the total variation of N(0,σ²) and N(1,σ²)). The
// connect-the-dots pair of that curve is the add pair's dots below 0 and
// the remove pair's above, and at 0 the jump of the chord's slope there.
func fixedPLD(q, sigma, h, tail float64) (lossDist, error) {
	add, rem := gaussianPair{q, sigma, false}, gaussianPair{q, sigma, true}
	lo, _, err := add.grid(h, tail)
	if err != nil {
		return lossDist{}, err
	}
	_, hi, err := rem.grid(h, tail)
	if err != nil {
		return lossDist{}, err
	}
	lo, hi = min(lo, -1), max(hi, 1)
	below, ta := add.dotsOn(lo, 0, h)
	above, tr := rem.dotsOn(0, hi, h)
	below[0] += ta.fP[0]
	// The slope of the chord jumps at 0 by Q_add(L > 0) - Q_remove(L > 0)
	// beyond what the two pairs' own dots put there.
	below[len(below)-1] += above[0] + (ta.sQ[len(below)-1] - tr.sQ[0])
	d := lossDist{h: h, lo: lo, p: append(below, above[1:]...)}
	return withTop(d, tr).finite()
}

// finite returns d, or an error if a mass of it is not a finite number
// (which no input should produce: a NaN would make ε 0).
func (d lossDist) finite() (lossDist, error) {
	for _, v := range d.p {
		if !(v >= 0 && v <= 1) {
			return lossDist{}, fmt.Errorf("privacy: a discretised privacy loss mass is %v", v)
		}
	}
	if !(d.inf >= 0 && d.inf <= 1) {
		return lossDist{}, fmt.Errorf("privacy: the discretised mass at +∞ is %v", d.inf)
	}
	return d, nil
}
