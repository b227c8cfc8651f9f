package tests

// The rounding bounds (bound_test.go) of the correlated-noise optimizers,
// BLT DP-SGD and BLT DP-Adam, whose step privatizes g itself: the noise
// block's buffers are states of the step, and the draw z of the step is an
// exact float32 input that the kernel and the oracle share.

import (
	"math"

	"github.com/fibergen/fibergen/tests/oracle"
)

// noisyBounded is the bound of a correlated-noise optimizer: noisyStep is
// its step with z, the coordinate's standard normal draw of step t, and x,
// the clipped mean gradient. Its step is noisyStep with z = 0: no noise
// drawn, so that x is the privatized gradient.
type noisyBounded interface {
	noisyStep(t int, sigmaW2, z float64, theta ev, x float64, st []ev, aux *float64) ev
}

// bltFilterBound is a BLT noise block in ev arithmetic, in the kernel's
// order: w = (z + ω̂_1 s_1) + ω̂_2 s_2 from the buffers' old values, then
// s_i = θ̂_i s_i + z, then g = x + σ_w w. The buffers' errors decay by θ̂_i
// per step and reach only w, so plain propagation does not overcount.
type bltFilterBound struct{ b oracle.BLT }

// privatize advances the buffers s in place and returns g.
func (f bltFilterBound) privatize(sigmaW2, z, x float64, s []ev) ev {
	w := exact(z)
	for k, wk := range f.b.Weight {
		w = add(w, mul(host(wk), s[k]))
	}
	for k, d := range f.b.Decay {
		s[k] = add(mul(host(d), s[k]), exact(z))
	}
	return add(exact(x), mul(host(math.Sqrt(sigmaW2)), w))
}

// bltSGDBound is BLT DP-SGD's step: the buffers st[1:], then
// m = μ m + g and θ − η m.
type bltSGDBound struct {
	h oracle.SGDMomentum
	f bltFilterBound
}

func (b bltSGDBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, aux *float64) ev {
	return b.noisyStep(t, sigmaW2, 0, theta, g, st, aux)
}

func (b bltSGDBound) noisyStep(_ int, sigmaW2, z float64, theta ev, x float64, st []ev, _ *float64) ev {
	g := b.f.privatize(sigmaW2, z, x, st[1:])
	st[0] = add(mul(host(b.h.Mu), st[0]), g) // m_t
	return sub(theta, mul(host(b.h.Lr), st[0]))
}

// bltAdamBound is BLT DP-Adam's step: the buffers st[2:], then DP-Adam's
// step on m, v.
type bltAdamBound struct {
	adamBound
	f bltFilterBound
}

func (b bltAdamBound) step(t int, sigmaW2 float64, theta ev, g float64, st []ev, aux *float64) ev {
	return b.noisyStep(t, sigmaW2, 0, theta, g, st, aux)
}

func (b bltAdamBound) noisyStep(t int, sigmaW2, z float64, theta ev, x float64, st []ev, _ *float64) ev {
	g := b.f.privatize(sigmaW2, z, x, st[2:])
	return b.update(t, theta, g, st[:2])
}
