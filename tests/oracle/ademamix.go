package oracle

import "math"

// AdEMAMixHypers are AdEMAMix's hypers (Pagliardini, Ablin & Grangier,
// "The AdEMAMix Optimizer: Better, Faster, Older", ICLR 2025, Algorithm 1):
// AdamW's, the slow EMA's decay β3 and weight α, and Warmup, the paper's
// T_{α,β3}: the steps over which the schedulers raise α from 0 and β3
// from β1 (0: no scheduler, α and β3 from the first step).
type AdEMAMixHypers struct {
	AdamW
	Beta3, Alpha, Warmup float64
}

// DefaultAdEMAMix returns AdamW's defaults with β3 = 0.9999, α = 5 and no
// warm-up.
func DefaultAdEMAMix() AdEMAMixHypers {
	return AdEMAMixHypers{AdamW: DefaultAdamW(), Beta3: 0.9999, Alpha: 5}
}

// warm is the schedulers' fraction at 0-based step t (the paper's t+1):
// min((t+1)/T, 1), 1 without a warm-up.
func (h AdEMAMixHypers) warm(t int) float64 {
	if h.Warmup == 0 {
		return 1
	}
	return math.Min(float64(t+1)/h.Warmup, 1)
}

// AlphaAt is α(t) = min(tα/T, α), the paper's linear scheduler.
func (h AdEMAMixHypers) AlphaAt(t int) float64 { return h.warm(t) * h.Alpha }

// Beta3At is the paper's β3 scheduler, which raises the half-life linearly:
// β3(t) = min(exp(ln β_s ln β_e / ((1 − a) ln β_e + a ln β_s)), β_e) with
// β_s = β1, β_e = β3 and a = t/T.
func (h AdEMAMixHypers) Beta3At(t int) float64 {
	a, ls, le := h.warm(t), math.Log(h.Beta1), math.Log(h.Beta3)
	return math.Min(math.Exp(ls*le/((1-a)*le+a*ls)), h.Beta3)
}

// AdEMAMix is Algorithm 1 on the privatized gradient, 0-based:
//
//	m1_t = β1 m1_{t−1} + (1 − β1) g_t
//	m2_t = β3(t) m2_{t−1} + (1 − β3(t)) g_t
//	ν_t  = β2 ν_{t−1} + (1 − β2) g_t²
//	θ_{t+1} = θ_t − η ((m̂1_t + α(t) m2_t) / (√ν̂_t + ε) + λ θ_t)
//
// with m̂1 and ν̂ bias-corrected as Adam's; the decay term is written
// (1 − ηλ) θ_t, as AdamW's.
type AdEMAMix struct {
	H         AdEMAMixHypers
	M1, M2, V []float64
	T         int // t, the index of the next step
}

// NewAdEMAMix returns AdEMAMix over n coordinates with every state 0.
func NewAdEMAMix(h AdEMAMixHypers, n int) *AdEMAMix {
	return &AdEMAMix{H: h, M1: make([]float64, n), M2: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g; sigmaW2 is
// unused.
func (o *AdEMAMix) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	b3, alpha := h.Beta3At(o.T), h.AlphaAt(o.T)
	for i := range theta {
		o.M1[i] = h.Beta1*o.M1[i] + (1-h.Beta1)*g[i]      // m1_t
		o.M2[i] = b3*o.M2[i] + (1-b3)*g[i]                // m2_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(g[i]*g[i]) // ν_t
		mHat := o.M1[i] / (1 - math.Pow(h.Beta1, t+1))    // m̂1_t
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))     // ν̂_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*(mHat+alpha*o.M2[i])/(math.Sqrt(vHat)+h.Eps)
	}
	o.T++
}
