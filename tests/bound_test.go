package tests

// The tolerance of the oracle tests: a rigorous bound on float32 rounding.
//
// fibergen's code computes every per-coordinate operation in float32 and
// rounds each result to nearest, so a result differs from the exact
// operation on its (already inexact) operands by at most u32 = 2^-24 of its
// magnitude, or 2^-150 below the normal range. Uniform values (hypers, t,
// sigma_w2 and everything built from them alone) are computed in float64 on
// the host and rounded to float32 once. The oracle computes the same
// quantities in float64 (u64 = 2^-53 per operation).
//
// A fixed tolerance like c·T·η·2^-24 does not fit FiBeR: the step
// η m̂/(√v̄ + ε) is not bounded by about η, because v̄ = max(v̂ − A σ_w², ε_v)
// can be much smaller than v̂ (the step then reaches η |m̂| / √ε_v, 10^4 η |m̂|
// for the default ε_v), and where v̂ − A σ_w² is close to ε_v the cancellation
// turns the tiny relative rounding of v̂ into a large relative change of v̄.
// The conditioning differs from coordinate to coordinate and step to step,
// so the tolerance must too.
//
// The tests therefore carry, next to every quantity x of the oracle, a bound
// e with |impl − x| ≤ e, where impl is the same quantity in fibergen's
// float32 code: an ev. Each operation propagates the bounds of its operands
// exactly (for z = x·y: |x'y' − xy| ≤ |x|e_y + |y|e_x + e_x e_y; for a
// quotient, a square root and max the analogous sharp inequalities, max
// in interval form so that an operand far below the floor adds nothing) and adds
// its own rounding, (u32 + 3·u64)·(|z| + propagated) + 2^-149: the float32
// rounding of fibergen, the float64 rounding of the oracle and their
// product terms. A host scalar c adds (u32 + 2^-36)|c|: one float32
// rounding, plus a margin for the host's float64 evaluation order, which may
// differ from the oracle's (2^-36 is over 100 times the float64 error of
// 1 − β2^(t+1) at β2 = 0.999). Nothing is linearized and there is no fudge
// factor (beyond 2^-30 relative for the bound's own float64 arithmetic, see
// within): the bound holds for any correctly rounded float32 evaluation of
// the paper's formulas in the paper's operation order, and is violated by
// anything else that changes a result by more than rounding.
//
// The bound is sharp: a single operation whose result lies just above a
// power of 2 reaches 0.999 of it (seen over 25 seeds of every case), and
// the stepwise check notices a hyper off by 1e-5 of its value (lr, ω) or
// β2 off by 1e-7. TestOracleDiscriminates keeps that demonstrated.
//
// Two checks use the bound:
//
//   - stepwise: before each step the oracle and the bound start from the
//     implementation's own state (exact, e = 0), so a step is checked on its
//     own, within a few units in the last place of its terms;
//   - trajectory: the oracle runs free from the initial state, the bounds
//     accumulate over all T steps, and the implementation must stay within
//     them at every step, including θ_T written by `fibergen run`. The
//     accumulated rounding of v̂ (about t·u32 relative) is amplified where
//     v̂ − A σ_w² is small, so for FiBeR with σ_w² > 0 this bound is loose
//     on some coordinates, honestly: their θ_T is ill-conditioned.
//
// Bounds on errors that feed back through a filter need care: FiBeR's
// innovation filter reads g̃ twice (ν = g − g̃ and g̃ + r), and adding the
// magnitudes of the two paths would grow the bound by about 1 + ω per step
// although the errors cancel. The filter's error instead obeys the linear
// recursion e_t = M e_{t-1} + δ_t with M = [[1−ω, 1−ω], [−ω, 1−ω]] on
// (g̃, r) and δ_t the step's own rounding, so e_t = Σ_k M^(t−k) δ_k, and
// |e_t| ≤ |δ_t| + C ρ S_{t−1} with S_t = ρ S_{t−1} + ‖δ_t‖∞ for any
// ρ > √(1−ω) (the spectral radius of M) and C ≥ the row sums of |M^j|/ρ^j
// for 1 ≤ j ≤ maxSteps, computed numerically by filterGain.

import (
	"math"

	"github.com/fibergen/fibergen/tests/oracle"
)

const (
	u32      = 0x1p-24          // unit roundoff of float32
	u64      = 0x1p-53          // unit roundoff of float64
	uOp      = u32 + 3*u64      // one operation: fibergen's rounding, the oracle's, and their products
	uHost    = u32 + 0x1p-36    // a host scalar: one float32 rounding of a float64 computed in another order
	tiny     = 0x1p-149         // the absolute rounding error below float32's normal range, rounded up
	maxSteps = 4096             // the longest run the filter's gain constants cover
	negInf   = -math.MaxFloat64 // "no lower bound known"
)

// ev is a quantity of a step: x, the oracle's value; e, a bound on how far
// fibergen's float32 value of the same quantity can be from x; lo, a lower
// bound on fibergen's value (negInf when none is known).
type ev struct {
	x, e, lo float64
}

// exact is a float32 input both sides share.
func exact(x float64) ev { return ev{x, 0, x} }

// host is a uniform value: float64 on the host, rounded to float32 once.
func host(c float64) ev {
	e := uHost*math.Abs(c) + tiny
	return ev{c, e, c - e}
}

// round is the result x of one operation whose operands carry the
// propagated error prop, with this operation's rounding added.
func round(x, prop, lo float64) ev {
	return ev{x, prop + uOp*(math.Abs(x)+prop) + tiny, lo}
}

func add(a, b ev) ev {
	lo := a.lo + b.lo // fibergen's sum is at least the rounded sum of the lower bounds
	lo -= uOp*math.Abs(lo) + tiny
	return round(a.x+b.x, a.e+b.e, max(lo, negInf))
}

func sub(a, b ev) ev { return round(a.x-b.x, a.e+b.e, negInf) }

func mul(a, b ev) ev {
	return round(a.x*b.x, math.Abs(a.x)*b.e+math.Abs(b.x)*a.e+a.e*b.e, negInf)
}

// div uses |a'/b' − a/b| ≤ (e_a|b| + |a|e_b) / (|b| |b'|), with |b'| bounded
// below by |b| − e_b or by b's lower bound; the bound is infinite where b'
// might be zero.
func div(a, b ev) ev {
	bmin := max(math.Abs(b.x)-b.e, b.lo)
	prop := math.Inf(1)
	if bmin > 0 && b.x != 0 {
		prop = (a.e*math.Abs(b.x) + math.Abs(a.x)*b.e) / (math.Abs(b.x) * bmin)
	}
	return round(a.x/b.x, prop, negInf)
}

// sqrtE uses |√a' − √a| = |a' − a| / (√a' + √a) ≤ √|a' − a|.
func sqrtE(a ev) ev {
	amin := max(a.x-a.e, a.lo, 0)
	prop := math.Sqrt(a.e)
	if d := math.Sqrt(a.x) + math.Sqrt(amin); d > 0 {
		prop = min(prop, a.e/d)
	}
	return round(math.Sqrt(a.x), prop, math.Sqrt(amin)*(1-uOp)-tiny)
}

// maxE is max, which rounds nothing: fibergen's max lies between the max of
// the operands' lower ends and the max of their upper ends, so an operand
// far below the other adds no error.
func maxE(a, b ev) ev {
	x := max(a.x, b.x)
	lower, upper := max(a.x-a.e, b.x-b.e), max(a.x+a.e, b.x+b.e)
	return ev{x, max(upper-x, x-lower) + u64*math.Abs(x), max(a.lo, b.lo)}
}

// bounded is an optimizer's step in ev arithmetic, for one coordinate: it
// updates the states st (in DSL order) in place and returns θ_{t+1}. aux is
// per-coordinate memory of the bound itself, zero at the start.
type bounded interface {
	step(t int, sigmaW2 float64, theta ev, g float64, st []ev, aux *float64) ev
}

// adamW is the AdamW part shared by FiBeR, DiSK and DP-AdamW: moments of
// the (filtered) gradient gt, bias correction, the second moment passed
// through correct, and the decoupled update. It updates m and v in place.
func adamW(h oracle.AdamW, t int, theta, gt ev, m, v *ev, correct func(vhat ev) ev) ev {
	*m = add(mul(host(h.Beta1), *m), mul(host(1-h.Beta1), gt))          // m_t
	*v = add(mul(host(h.Beta2), *v), mul(host(1-h.Beta2), mul(gt, gt))) // v_t
	mhat := div(*m, host(1-math.Pow(h.Beta1, float64(t+1))))            // m̂_t
	vhat := div(*v, host(1-math.Pow(h.Beta2, float64(t+1))))            // v̂_t
	den := add(sqrtE(correct(vhat)), host(h.Eps))                       // √v̄_t + ε
	return sub(mul(host(1-h.Lr*h.Wd), theta), div(mul(host(h.Lr), mhat), den))
}

func uncorrected(vhat ev) ev { return vhat }

// fiberBound is FiBeR's step (Algorithm 2) in ev arithmetic.
type fiberBound struct {
	h       oracle.FiBeRHypers
	rho     float64 // the decay rate of the filter's error
	cGt, cR float64 // the gain constants of g̃ and r
	atten   float64 // A(ω)
	// store is the relative rounding of a store of g̃ and r: 0 for
	// float32 states, uBF16 for bfloat16 ones, whose rounding is part of
	// the step's δ in the filter's error recursion (fiber_bf16).
	store float64
}

func newFiberBound(h oracle.FiBeRHypers) fiberBound {
	rho, cGt, cR := filterGain(h.Omega)
	return fiberBound{h: h, rho: rho, cGt: cGt, cR: cR, atten: oracle.Attenuation(h.Omega)}
}

func (b fiberBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, hist *float64) ev {
	h := b.h
	gt, r := b.filter(g, st[0], st[1], hist)
	st[0], st[1] = gt, r
	vbar := func(vhat ev) ev { // v̄_t = max(v̂_t − A(ω) σ_w², ε_v)
		return maxE(sub(vhat, host(b.atten*sigmaW2)), host(h.EpsV))
	}
	next := adamW(h.AdamW, t, theta, gt, &st[2], &st[3], vbar)
	st[4] = lookahead(h.Gamma, theta, next)
	return next
}

// scheduledBound is FiBeR's bound with the learning rate of step t taken
// from a schedule: the host computes it in float64 and the kernel reads
// lr_t and lr_t·λ rounded to float32, as host() models.
type scheduledBound struct {
	fiberBound
	s oracle.CosineSchedule
}

func (b scheduledBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, hist *float64) ev {
	b.h.Lr = b.s.At(t)
	return b.fiberBound.step(t, sigmaW2, theta, g, st, hist)
}

// lookahead is the state lookahead = θ_{t+1} + γ (θ_{t+1} − θ_t) that the
// compiler adds to a two_point optimizer (oracle.LookaheadPoint): three
// float32 operations on the bounds of θ_t and θ_{t+1}, whose errors add up
// in the difference, as nothing here shows that they cancel.
func lookahead(gamma float64, theta, next ev) ev {
	return add(next, mul(host(gamma), sub(next, theta)))
}

// filter is the innovation filter ν = g − g̃, r = (1−ω) r + ω ν, g̃ = g̃ + r,
// with the error analysis of the comment at the top of this file: δ is this
// step's rounding, hist the running sum S.
func (b fiberBound) filter(g float64, gt, r ev, hist *float64) (ev, ev) {
	w := b.h.Omega
	c0, c1 := host(1-w), host(w)
	nu := g - gt.x                 // ν_t
	rNew := (1-w)*r.x + w*nu       // r_t
	gtNew := gt.x + rNew           // g̃_t
	gtMax := math.Abs(gt.x) + gt.e // bounds on fibergen's |g̃_{t-1}|, |r_{t-1}|, |ν_t|
	rMax := math.Abs(r.x) + r.e
	nuMax := math.Abs(nu) + gt.e
	p0 := (math.Abs(1-w) + c0.e) * rMax // bounds on |fl((1−ω) r)| and |fl(ω ν)| before rounding
	p1 := (math.Abs(w) + c1.e) * nuMax
	rNewMax := (p0+p1)*(1+2*uOp) + 3*tiny
	dNu := uOp*nuMax + tiny
	dR := w*dNu + c0.e*rMax + c1.e*nuMax + uOp*(p0+p1+rNewMax) + 3*tiny
	dGt := dR + uOp*(gtMax+rNewMax) + tiny
	dR += b.store * (rNewMax + dR) // the store's rounding of r_t and g̃_t
	dGt += b.store * (math.Abs(gtNew) + dGt)
	eGt := dGt + b.cGt*b.rho**hist
	eR := dR + b.cR*b.rho**hist
	*hist = b.rho**hist + max(dGt, dR)
	return ev{gtNew, eGt, negInf}, ev{rNew, eR, negInf}
}

// filterGain returns a decay rate ρ > √(1−ω) and constants C with
// rowsum(|M^j|) ≤ C ρ^j for 1 ≤ j ≤ maxSteps, for g̃ and r, picking ρ to
// keep C ρ / (1 − ρ) small.
func filterGain(omega float64) (rho, cGt, cR float64) {
	spectral := math.Sqrt(1 - omega)
	best := math.Inf(1)
	for _, f := range []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.5} {
		r := spectral + f*(1-spectral)
		c0, c1 := gainConstants(omega, r)
		if cost := max(c0, c1) * r / (1 - r); cost < best {
			best, rho, cGt, cR = cost, r, c0, c1
		}
	}
	return rho, cGt, cR
}

func gainConstants(omega, rho float64) (cGt, cR float64) {
	m := [2][2]float64{{1 - omega, 1 - omega}, {-omega, 1 - omega}}
	p := m
	scale := rho
	for j := 1; j <= maxSteps; j++ {
		cGt = max(cGt, (math.Abs(p[0][0])+math.Abs(p[0][1]))/scale)
		cR = max(cR, (math.Abs(p[1][0])+math.Abs(p[1][1]))/scale)
		p = [2][2]float64{
			{m[0][0]*p[0][0] + m[0][1]*p[1][0], m[0][0]*p[0][1] + m[0][1]*p[1][1]},
			{m[1][0]*p[0][0] + m[1][1]*p[1][0], m[1][0]*p[0][1] + m[1][1]*p[1][1]},
		}
		scale *= rho
		if scale < 1e-300 {
			break // M^j ≤ C ρ^j is then far below anything the test can see
		}
	}
	const slack = 1 + 1e-9 // the float64 rounding of the powers above
	return cGt * slack, cR * slack
}

// diskBound is the step of DiSK, or of DiSK-CORR if corrected, in ev
// arithmetic.
type diskBound struct {
	h         oracle.DiSKHypers
	corrected bool
	epsV      float64
}

func (b diskBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, _ *float64) ev {
	k := b.h.Kappa
	st[0] = add(mul(host(1-k), st[0]), mul(host(k), exact(g))) // g̃_t = (1−κ) g̃_{t-1} + κ g_t
	correct := uncorrected
	if b.corrected {
		a := oracle.DiSKCorrAttenuation(k)
		correct = func(vhat ev) ev {
			return maxE(sub(vhat, host(a*sigmaW2)), host(b.epsV)) // v̄_t
		}
	}
	next := adamW(b.h.AdamW, t, theta, st[0], &st[1], &st[2], correct)
	st[3] = lookahead(b.h.Gamma, theta, next)
	return next
}

// abTrackBound is the alpha-beta tracker's step in ev arithmetic; the
// hyper settings keep the row sums of |M| at most 1 (α ≥ 1/2, β ≤ 1), so
// the states' error bounds grow at most linearly.
type abTrackBound struct{ h oracle.ABTrackHypers }

func (b abTrackBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, _ *float64) ev {
	h := b.h
	p := add(st[0], st[1])                 // l + s
	nu := sub(exact(g), p)                 // ν
	st[0] = add(p, mul(host(h.Alpha), nu)) // l
	st[1] = add(st[1], mul(host(h.Beta), nu))
	a := oracle.ABTrackAttenuation(h.Alpha, h.Beta)
	return adamW(h.AdamW, t, theta, st[0], &st[2], &st[3], func(vhat ev) ev {
		return maxE(sub(vhat, host(a*sigmaW2)), host(h.EpsV))
	})
}

// adamWBound is DP-AdamW's step in ev arithmetic.
type adamWBound struct{ h oracle.AdamW }

func (b adamWBound) step(t int, _ float64, theta ev, g float64, st []ev, _ *float64) ev {
	return adamW(b.h, t, theta, exact(g), &st[0], &st[1], uncorrected)
}

// sgdBound is DP-SGD's step in ev arithmetic.
// signE is the DSL's sign. Where a's error interval excludes 0, fibergen's
// sign is the oracle's, exactly; else it may be any of -1, 0 and 1.
func signE(a ev) ev {
	s := 0.0
	switch {
	case a.x > 0:
		s = 1
	case a.x < 0:
		s = -1
	}
	if math.Abs(a.x) > a.e {
		return ev{s, 0, s}
	}
	return ev{s, 1 + math.Abs(s), -1}
}

// lionBound is DP-Lion's step: c from the old m, θ, then m.
type lionBound struct{ h oracle.Lion }

func (b lionBound) step(_ int, _ float64, theta ev, g float64, st []ev, _ *float64) ev {
	h, m := b.h, &st[0]
	c := add(mul(host(h.Beta1), *m), mul(host(1-h.Beta1), exact(g)))
	next := sub(theta, mul(host(h.Lr), add(signE(c), mul(host(h.Wd), theta))))
	*m = add(mul(host(h.Beta2), *m), mul(host(1-h.Beta2), exact(g)))
	return next
}

// scheduleFreeBound is Schedule-Free AdamW's step in ev arithmetic: v, z,
// x, then θ = y, with z and x starting at θ at step 0 (docs/dsl.md). A
// uniform bound averages with c = 1/(t+1) instead of γ_t²/Σγ_i²
// (Schedule-Free SGD's weights), for TestOracleDiscriminatesFamily.
type scheduleFreeBound struct {
	h       oracle.ScheduleFreeHypers
	uniform bool
}

func (b scheduleFreeBound) step(t int, _ float64, theta ev, g float64, st []ev, _ *float64) ev {
	h, z, x, v := b.h, &st[0], &st[1], &st[2]
	if t == 0 {
		*z, *x = theta, theta
	}
	gamma, c, gt := host(h.Gamma(t)), h.Weight(t), exact(g)
	if b.uniform {
		c = 1 / float64(t+1)
	}
	*v = add(mul(host(h.Beta2), *v), mul(host(1-h.Beta2), mul(gt, gt)))
	*z = sub(*z, mul(gamma, add(div(gt, add(sqrtE(*v), host(h.Eps))), mul(host(h.Wd), theta))))
	*x = add(mul(host(1-c), *x), mul(host(c), *z))
	return add(*x, mul(host(1-h.Beta1), sub(*z, *x))) // y as the DSL writes it: x + (1 − β1)(z − x)
}

// adEMAMixBound is AdEMAMix's step in ev arithmetic, with α(t) and β3(t)
// from the paper's schedulers or, for TestOracleDiscriminatesFamily, from
// a mistaken schedule.
type adEMAMixBound struct {
	h        oracle.AdEMAMixHypers
	schedule func(h oracle.AdEMAMixHypers, t int) (beta3, alpha float64)
}

// flatSchedule runs β3 and α at their final values from step 0.
func flatSchedule(h oracle.AdEMAMixHypers, _ int) (float64, float64) { return h.Beta3, h.Alpha }

// linearBeta3 interpolates β3 itself from β1, not its half-life.
func linearBeta3(h oracle.AdEMAMixHypers, t int) (float64, float64) {
	a := h.AlphaAt(t) / h.Alpha
	return (1-a)*h.Beta1 + a*h.Beta3, h.AlphaAt(t)
}

func (b adEMAMixBound) step(t int, _ float64, theta ev, g float64, st []ev, _ *float64) ev {
	h, gt := b.h, exact(g)
	b3, alpha := h.Beta3At(t), h.AlphaAt(t)
	if b.schedule != nil {
		b3, alpha = b.schedule(h, t)
	}
	st[0] = add(mul(host(h.Beta1), st[0]), mul(host(1-h.Beta1), gt))          // m1_t
	st[1] = add(mul(host(b3), st[1]), mul(host(1-b3), gt))                    // m2_t
	st[2] = add(mul(host(h.Beta2), st[2]), mul(host(1-h.Beta2), mul(gt, gt))) // ν_t
	mhat := div(st[0], host(1-math.Pow(h.Beta1, float64(t+1))))
	vhat := div(st[2], host(1-math.Pow(h.Beta2, float64(t+1))))
	num := mul(host(h.Lr), add(mhat, mul(host(alpha), st[1])))
	return sub(mul(host(1-h.Lr*h.Wd), theta), div(num, add(sqrtE(vhat), host(h.Eps))))
}

type sgdBound struct{ lr float64 }

func (b sgdBound) step(_ int, _ float64, theta ev, g float64, _ []ev, _ *float64) ev {
	return sub(theta, mul(host(b.lr), exact(g))) // θ_{t+1} = θ_t − η g_t
}

// The rounding of a state stored as bfloat16 (docs/dsl.md, "Storage
// types"): to nearest, at most uBF16 of the magnitude (8 significant bits),
// or tinyBF16 below the normal range, whose exponents are float32's.
const (
	uBF16    = 0x1p-8
	tinyBF16 = 0x1p-134
)

// storedBound is b with the states narrow stored as bfloat16: the step
// computes in float32 from the stored values and the float32 values it
// made, and each store rounds the state to nearest bfloat16, which adds at
// most uBF16 of its magnitude to its bound. θ is computed before the store,
// from the float32 values, as the kernels compute it.
type storedBound struct {
	bounded
	narrow []int
}

func (s storedBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, aux *float64) ev {
	next := s.bounded.step(t, sigmaW2, theta, g, st, aux)
	for _, k := range s.narrow {
		st[k] = storedBF16(st[k])
	}
	return next
}

// storedBF16 is a rounded to nearest bfloat16.
func storedBF16(a ev) ev {
	lo := a.lo
	if lo != negInf {
		lo -= uBF16*math.Abs(lo) + tinyBF16
	}
	return ev{a.x, a.e + uBF16*(math.Abs(a.x)+a.e) + tinyBF16, lo}
}
