package oracle

import "math"

// LAMB is LAMB (You et al. 2020, "Large Batch Optimization for Deep
// Learning", Algorithm 2, φ the identity) on one tensor: Adam's bias-
// corrected step r plus decoupled weight decay, scaled by the tensor's
// trust ratio ‖θ‖ / ‖r + λθ‖ (1 where either norm is 0).
type LAMB struct {
	H    AdamW
	T    int // t, the index of the next step (from 0)
	M, V []float64
}

// NewLAMB returns LAMB over a tensor of n coordinates, m = v = 0.
func NewLAMB(h AdamW, n int) *LAMB {
	return &LAMB{H: h, M: make([]float64, n), V: make([]float64, n)}
}

// Step advances the tensor theta on its privatized gradient g.
func (o *LAMB) Step(theta, g []float64) {
	h := o.H
	o.T++
	u := make([]float64, len(theta))
	for i := range theta {
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*g[i]
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*g[i]*g[i]
		mh := o.M[i] / (1 - math.Pow(h.Beta1, float64(o.T)))
		vh := o.V[i] / (1 - math.Pow(h.Beta2, float64(o.T)))
		u[i] = mh/(math.Sqrt(vh)+h.Eps) + h.Wd*theta[i]
	}
	trust, wn, un := 1.0, Norm(theta), Norm(u)
	if wn > 0 && un > 0 {
		trust = wn / un
	}
	for i := range theta {
		theta[i] -= h.Lr * trust * u[i]
	}
}

// LARSHypers are LARS's hypers.
type LARSHypers struct {
	Lr  float64 // γ, the global rate
	Mu  float64 // m, the momentum
	Wd  float64 // β, the weight decay
	Eta float64 // η, the trust coefficient
}

// LARS is LARS (You, Gitman and Ginsburg 2017, "Large Batch Training of
// Convolutional Networks", Algorithm 1) on one tensor: the local rate
// λ = η‖w‖ / (‖∇‖ + β‖w‖) (1 where either norm is 0), then
// v = m·v + γλ(∇ + βw) and w = w − v.
type LARS struct {
	H LARSHypers
	V []float64
}

// NewLARS returns LARS over a tensor of n coordinates, v = 0.
func NewLARS(h LARSHypers, n int) *LARS { return &LARS{H: h, V: make([]float64, n)} }

// Step advances the tensor theta on its privatized gradient g.
func (o *LARS) Step(theta, g []float64) {
	h := o.H
	wn, gn := Norm(theta), Norm(g)
	local := 1.0
	if wn > 0 && gn > 0 {
		local = h.Eta * wn / (gn + h.Wd*wn)
	}
	for i := range theta {
		o.V[i] = h.Mu*o.V[i] + h.Lr*local*(g[i]+h.Wd*theta[i])
		theta[i] -= o.V[i]
	}
}
