package tests

// The rounding bounds (bound_test.go) of the optimizers added after FiBeR's
// paper set: DP-Adam, DP-AdamBC, FiBeR's ablations and the DOPPLER-style
// second-order low-pass filter.

import (
	"math"

	"github.com/fibergen/fibergen/tests/oracle"
)

// adamBound is DP-Adam's step in ev arithmetic: coupled L2 weight decay
// g + λθ, the moments, and the update without decoupled decay.
type adamBound struct{ h oracle.AdamW }

func (b adamBound) step(t int, _ float64, theta ev, g float64, st []ev, _ *float64) ev {
	return b.update(t, theta, exact(g), st)
}

// update is DP-Adam's step on the privatized gradient g.
func (b adamBound) update(t int, theta, g ev, st []ev) ev {
	h := b.h
	gw := add(g, mul(host(h.Wd), theta))                                      // g_t + λ θ_t
	st[0] = add(mul(host(h.Beta1), st[0]), mul(host(1-h.Beta1), gw))          // m_t
	st[1] = add(mul(host(h.Beta2), st[1]), mul(host(1-h.Beta2), mul(gw, gw))) // v_t
	mhat := div(st[0], host(1-math.Pow(h.Beta1, float64(t+1))))               // m̂_t
	vhat := div(st[1], host(1-math.Pow(h.Beta2, float64(t+1))))               // v̂_t
	den := add(sqrtE(vhat), host(h.Eps))                                      // √v̂_t + ε
	return sub(theta, div(mul(host(h.Lr), mhat), den))                        // θ_{t+1}
}

// adamBCBound is DP-AdamBC's step in ev arithmetic.
type adamBCBound struct {
	h    oracle.AdamW
	epsV float64
}

func (b adamBCBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, _ *float64) ev {
	return adamW(b.h, t, theta, exact(g), &st[0], &st[1], func(vhat ev) ev {
		return maxE(sub(vhat, host(sigmaW2)), host(b.epsV)) // v̄_t = max(v̂_t − σ_w², ε_v)
	})
}

// fiberCorrection says what a FiBeR ablation subtracts from v̂_t.
type fiberCorrection int

const (
	noCorrection         fiberCorrection = iota // nothing: v̄_t = max(v̂_t, ε_v)
	fullCorrection                              // σ_w², as if A = 1
	finiteTimeCorrection                        // A_t(ω) σ_w²
	noiseFloor                                  // A(ω) σ_w², floored at max(κ_v A(ω) σ_w², ε_v)
	relativeFloor                               // A(ω) σ_w², floored at max(ρ v̂_t, ε_v)
)

// fiberAblationBound is the step of a FiBeR ablation in ev arithmetic:
// FiBeR's filter and moments, with the correction kind.
type fiberAblationBound struct {
	fiberBound
	kind   fiberCorrection
	attenT []float64 // A_t(ω) for t < oracleSteps, for finiteTimeCorrection
	floorK float64   // κ_v for noiseFloor, ρ for relativeFloor
}

// newFiberFloorBound is the bound of fiber_nfloor (noiseFloor, k = κ_v) or
// fiber_rfloor (relativeFloor, k = ρ).
func newFiberFloorBound(h oracle.FiBeRHypers, kind fiberCorrection, k float64) fiberAblationBound {
	b := newFiberAblationBound(h, kind)
	b.floorK = k
	return b
}

func newFiberAblationBound(h oracle.FiBeRHypers, kind fiberCorrection) fiberAblationBound {
	b := fiberAblationBound{fiberBound: newFiberBound(h), kind: kind}
	if kind == finiteTimeCorrection {
		for t := range oracleSteps {
			b.attenT = append(b.attenT, oracle.FiniteAttenuation(h.Omega, t))
		}
	}
	return b
}

func (b fiberAblationBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, hist *float64) ev {
	gt, r := b.filter(g, st[0], st[1], hist)
	st[0], st[1] = gt, r
	next := adamW(b.h.AdamW, t, theta, gt, &st[2], &st[3], func(vhat ev) ev {
		switch b.kind {
		case fullCorrection:
			return maxE(sub(vhat, host(sigmaW2)), host(b.h.EpsV))
		case finiteTimeCorrection:
			a := 0.0
			if t < len(b.attenT) {
				a = b.attenT[t]
			} else {
				a = oracle.FiniteAttenuation(b.h.Omega, t)
			}
			return maxE(sub(vhat, host(a*sigmaW2)), host(b.h.EpsV))
		case noiseFloor:
			filt := b.atten * sigmaW2
			return maxE(sub(vhat, host(filt)), host(math.Max(b.floorK*filt, b.h.EpsV)))
		case relativeFloor:
			return maxE(sub(vhat, host(b.atten*sigmaW2)), maxE(mul(host(b.floorK), vhat), host(b.h.EpsV)))
		}
		return maxE(vhat, host(b.h.EpsV))
	})
	st[4] = lookahead(b.h.Gamma, theta, next)
	return next
}

// dopplerBound is the step of the second-order low-pass filter
// y_t = b0 g_t + b1 g_{t-1} − a1 y_{t-1} − a2 y_{t-2} feeding AdamW, in ev
// arithmetic. As for FiBeR's filter (bound_test.go), the error of y obeys
// the filter's own recursion e_t = −a1 e_{t-1} − a2 e_{t-2} + δ_t, so
// e_t = Σ_k h_{t−k} δ_k with h the impulse response of 1/(1 + a1 z⁻¹ + a2 z⁻²),
// and |e_t| ≤ δ_t + C ρ S_{t−1}, S_t = ρ S_{t−1} + δ_t, for |h_j| ≤ C ρ^j,
// 1 ≤ j ≤ maxSteps. y_{t-1} and g_{t-1} are stored copies: they add no
// rounding.
type dopplerBound struct {
	h      oracle.DopplerHypers
	rho, c float64
}

func newDopplerBound(h oracle.DopplerHypers) dopplerBound {
	rho, c := dopplerGain(h.A1, h.A2)
	return dopplerBound{h: h, rho: rho, c: c}
}

func (b dopplerBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, hist *float64) ev {
	h := b.h
	y, y1, g1 := st[0], st[1], st[2]
	yNew := h.B0*g + h.B1*g1.x - h.A1*y.x - h.A2*y1.x // y_t, in the oracle's order
	cb0, cb1, ca1, ca2 := host(h.B0), host(h.B1), host(h.A1), host(h.A2)
	gMax, g1Max := math.Abs(g), math.Abs(g1.x)+g1.e // bounds on fibergen's operands
	yMax, y1Max := math.Abs(y.x)+y.e, math.Abs(y1.x)+y1.e
	p0, p1 := (math.Abs(h.B0)+cb0.e)*gMax, (math.Abs(h.B1)+cb1.e)*g1Max // the products before rounding
	p2, p3 := (math.Abs(h.A1)+ca1.e)*yMax, (math.Abs(h.A2)+ca2.e)*y1Max
	s1 := (p0+p1)*(1+2*uOp) + 3*tiny // b0 g + b1 g1
	s2 := (s1+p2*(1+uOp)+tiny)*(1+uOp) + tiny
	yRounded := (s2+p3*(1+uOp)+tiny)*(1+uOp) + tiny
	delta := cb0.e*gMax + cb1.e*g1Max + ca1.e*yMax + ca2.e*y1Max +
		uOp*(p0+p1+s1+p2+s2+p3+yRounded) + 7*tiny
	eY := delta + b.c*b.rho**hist
	*hist = b.rho**hist + delta
	st[0], st[1], st[2] = ev{yNew, eY, negInf}, y, exact(g)
	c, at := oracle.DopplerResponse(h.B0, h.B1, h.A1, h.A2, t)
	return adamW(h.AdamW, t, theta, div(st[0], host(c)), &st[3], &st[4], func(vhat ev) ev {
		return maxE(sub(vhat, host(at*sigmaW2/(c*c))), host(h.EpsV)) // v̄_t
	})
}

// dopplerGain returns a decay rate ρ above the largest pole modulus of
// z² + a1 z + a2 and C with |h_j| ≤ C ρ^j for 1 ≤ j ≤ maxSteps, h the
// impulse response of 1/(1 + a1 z⁻¹ + a2 z⁻²), picking ρ to keep
// C ρ / (1 − ρ) small.
func dopplerGain(a1, a2 float64) (rho, c float64) {
	var poles float64
	if d := a1*a1 - 4*a2; d < 0 {
		poles = math.Sqrt(a2)
	} else {
		poles = max(math.Abs(-a1+math.Sqrt(d)), math.Abs(-a1-math.Sqrt(d))) / 2
	}
	best := math.Inf(1)
	for _, f := range []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.5} {
		r := poles + f*(1-poles)
		cr := impulseConstant(a1, a2, r)
		if cost := cr * r / (1 - r); cost < best {
			best, rho, c = cost, r, cr
		}
	}
	return rho, c
}

// impulseConstant is max |h_j| / ρ^j over 1 ≤ j ≤ maxSteps, with the
// recursion h_j = −a1 h_{j−1} − a2 h_{j−2}, h_0 = 1, h_{−1} = 0.
func impulseConstant(a1, a2, rho float64) float64 {
	c, prev, cur, scale := 0.0, 0.0, 1.0, 1.0
	for range maxSteps {
		prev, cur = cur, -a1*cur-a2*prev
		scale *= rho
		c = max(c, math.Abs(cur)/scale)
		if scale < 1e-300 {
			break // h_j ≤ C ρ^j is then far below anything the test can see
		}
	}
	const slack = 1 + 1e-9 // the float64 rounding of the recursion
	return c * slack
}
