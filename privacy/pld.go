package privacy

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// lossDist is a discrete privacy loss distribution (PLD): the law, under
// the first distribution P of a pair (P, Q), of the privacy loss
// log(dP/dQ), with mass p[i] at the loss (lo+i)·h and mass inf at +∞.
// Its hockey-stick curve is
//
//	δ(ε) = inf + Σ_i p[i]·(1 - e^(ε - (lo+i)·h))₊,
//
// and the PLD of the composition of pairs is the convolution of theirs.
type lossDist struct {
	h   float64
	lo  int
	p   []float64
	inf float64
}

// ErrBeyondPLD is the error of a run the PLD accountant cannot resolve:
// its grid would be too wide, or its δ too small for the rounding of its
// compositions. RDP has neither limit.
var ErrBeyondPLD = errors.New("use the RDP accountant")

// compose returns the PLD of the composition of d and e on their common
// grid, with tails of mass at most tail moved outward (truncate), or an
// error if it would span more than maxGridPoints.
func (d lossDist) compose(e lossDist, tail float64) (lossDist, error) {
	if n := len(d.p) + len(e.p) - 1; n > maxGridPoints {
		return lossDist{}, fmt.Errorf("the composed privacy loss spans more than %d points of %.3g: %w", maxGridPoints, d.h, ErrBeyondPLD)
	}
	c := lossDist{h: d.h, lo: d.lo + e.lo, p: convolve(d.p, e.p), inf: d.inf + e.inf - d.inf*e.inf}
	return c.truncate(tail), nil
}

// selfCompose returns the PLD of n compositions of d, by binary powers,
// moving at most 2·budget of mass outward in all (truncate, on either
// side; more where roundingFloor exceeds the shares). Mass moved at the
// power d^(2^j) is moved again in each of the up to n/2^j copies of that
// power the result holds, so the power's truncations get
// budget/(2·levels·(n>>j)) each and the accumulating products, used
// once, budget/(2·levels).
func (d lossDist) selfCompose(n int, budget float64) (lossDist, error) {
	levels := float64(bits.Len(uint(n)))
	var acc lossDist
	have := false
	var err error
	for pow, j := d, 0; ; j++ {
		if n>>j&1 == 1 {
			if !have {
				acc, have = pow, true
			} else if acc, err = acc.compose(pow, budget/(2*levels)); err != nil {
				return acc, err
			}
		}
		if n>>(j+1) == 0 {
			return acc, nil
		}
		if pow, err = pow.compose(pow, budget/(2*levels*float64(n>>(j+1)))); err != nil {
			return pow, err
		}
	}
}

// roundingFloor is the least mass truncate cuts: the FFT's rounding
// leaves entries of about 1e-17 to 1e-20 where the exact ones are smaller
// still, and summed over a long tail they would keep a smaller cut from
// ever happening, so that the grid doubled with every composition.
const roundingFloor = 1e-15

// truncate drops the top entries whose total mass is at most tail (or
// roundingFloor) into inf, and adds the bottom entries whose total is at
// most that onto the lowest entry kept. Both only raise losses, so the δ
// of the result is never below that of d. It changes d.p in place (a
// fresh convolution's).
func (d lossDist) truncate(tail float64) lossDist {
	tail = max(tail, roundingFloor)
	top, mass := len(d.p), 0.0
	for top > 1 && mass+d.p[top-1] <= tail {
		top--
		mass += d.p[top]
	}
	d.inf += mass
	bottom, low := 0, 0.0
	for bottom < top-1 && low+d.p[bottom] <= tail {
		low += d.p[bottom]
		bottom++
	}
	p := d.p[bottom:top]
	p[0] += low
	d.p, d.lo = p, d.lo+bottom
	return d
}

// delta returns δ(ε) of d.
func (d lossDist) delta(eps float64) float64 {
	sum := 0.0
	for i := len(d.p) - 1; i >= 0; i-- {
		l := float64(d.lo+i) * d.h
		if l <= eps {
			break
		}
		sum += d.p[i] * -math.Expm1(eps-l)
	}
	return min(1, d.inf+sum)
}

// epsilon returns the smallest ε >= 0 with delta(ε) <= target, or +Inf if
// the mass at +∞ alone exceeds target. Between grid points δ is linear in
// e^ε, so the answer is exact for d: it scans the grid from the top with
// a = Σ_{j>i} p[j] and c = Σ_{j>i} p[j]·e^(l_i - l_j), where
// δ(l_i) = inf + a - c, until δ at a grid point exceeds target, and
// solves the linear piece above it.
func (d lossDist) epsilon(target float64) float64 {
	base := d.inf
	if !(base < target) {
		return math.Inf(1)
	}
	a, c, decay := 0.0, 0.0, math.Exp(-d.h)
	for i := len(d.p) - 1; i >= 0; i-- {
		l := float64(d.lo+i) * d.h
		if base+a-c > target {
			return max(0, l+math.Log((base+a-target)/c))
		}
		if l <= 0 {
			return 0
		}
		a += d.p[i]
		c = (c + d.p[i]) * decay
	}
	if c == 0 {
		return 0
	}
	l := float64(d.lo-1) * d.h
	return max(0, l+math.Log((base+a-target)/c))
}
