// Package oracle holds hand-written float64 reference implementations of the
// optimizers in the FiBeR paper: FiBeR (Algorithm 2), DiSK (the EMA filter of
// eq. (4) fed to AdamW) and DiSK-CORR (Appendix B.6), DP-AdamW and DP-SGD
// (Algorithm 1), and an alpha-beta tracker with the attenuation of its level
// from the tracking literature.
//
// The code is transcribed from the paper's equations and never from
// fibergen's DSL, IR or generated code, so that a bug shared by every
// fibergen target cannot hide from the tests. Everything is float64: the
// oracle is the mathematical reference that fibergen's float32 code
// approximates. Each optimizer keeps its state per coordinate and advances
// it with Step(theta, g, sigmaW2), where g is the privatized gradient g_t
// and sigmaW2 the per-coordinate DP noise variance σ_w².
package oracle

import "math"

// AdamW holds the AdamW hypers shared by FiBeR, DiSK and DP-AdamW.
type AdamW struct {
	Lr    float64 // η, the step size
	Beta1 float64 // β1, first-moment decay
	Beta2 float64 // β2, second-moment decay
	Eps   float64 // ε, added to the denominator
	Wd    float64 // λ, decoupled weight decay
}

// DefaultAdamW returns the paper's defaults: η = 1e-3, β = (0.9, 0.999),
// ε = 1e-8, λ = 0.
func DefaultAdamW() AdamW {
	return AdamW{Lr: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Wd: 0}
}

// FiBeRHypers are FiBeR's hypers. Kappa and Gamma shape only the two-point
// observation that produces g_t; they do not enter the step.
type FiBeRHypers struct {
	AdamW
	Kappa float64 // κ
	Gamma float64 // γ
	Omega float64 // ω, the innovation gain
	EpsV  float64 // ε_v, the floor of the corrected second moment
}

// DefaultFiBeR returns the paper's defaults (κ = 0.6, γ = 0.7, ω = 0.9,
// ε_v = 1e-8, AdamW defaults).
func DefaultFiBeR() FiBeRHypers {
	return FiBeRHypers{AdamW: DefaultAdamW(), Kappa: 0.6, Gamma: 0.7, Omega: 0.9, EpsV: 1e-8}
}

// Attenuation is A(ω) = (2 − ω) / (4 − 3ω), the steady-state factor by which
// the innovation filter scales the DP noise variance (eq. (10)).
func Attenuation(omega float64) float64 {
	return (2 - omega) / (4 - 3*omega)
}

// FiBeR is Algorithm 2: innovation filtering, AdamW moments on the filtered
// gradient and the filter-aware second-moment correction.
type FiBeR struct {
	H FiBeRHypers
	T int       // t, the index of the next step (from 0)
	G []float64 // g̃_{t-1}, the filtered gradient
	R []float64 // r_{t-1}, the smoothed innovation
	M []float64 // m_{t-1}
	V []float64 // v_{t-1}
}

// NewFiBeR returns FiBeR over n coordinates with g̃ = r = m = v = 0.
func NewFiBeR(h FiBeRHypers, n int) *FiBeR {
	return &FiBeR{H: h, G: make([]float64, n), R: make([]float64, n), M: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g.
func (o *FiBeR) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	sigmaFilt2 := Attenuation(h.Omega) * sigmaW2 // σ²_filt = A(ω) σ_w²
	for i := range theta {
		nu := g[i] - o.G[i]                                                   // ν_t = g_t − g̃_{t-1}
		o.R[i] = (1-h.Omega)*o.R[i] + h.Omega*nu                              // r_t = (1−ω) r_{t-1} + ω ν_t
		o.G[i] = o.G[i] + o.R[i]                                              // g̃_t = g̃_{t-1} + r_t
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*o.G[i]                          // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(o.G[i]*o.G[i])                 // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))                         // m̂_t = m_t / (1 − β1^{t+1})
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))                         // v̂_t = v_t / (1 − β2^{t+1})
		vBar := math.Max(vHat-sigmaFilt2, h.EpsV)                             // v̄_t = max(v̂_t − σ²_filt, ε_v)
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps) // θ_{t+1}
	}
	o.T++
}

// DiSKHypers are DiSK's hypers; Gamma shapes only the observation.
type DiSKHypers struct {
	AdamW
	Kappa float64 // κ, the filter gain
	Gamma float64 // γ
}

// DefaultDiSK returns the paper's defaults (κ = 0.6, γ = 0.7, AdamW defaults).
func DefaultDiSK() DiSKHypers {
	return DiSKHypers{AdamW: DefaultAdamW(), Kappa: 0.6, Gamma: 0.7}
}

// DiSK is the EMA filter g̃_t = (1 − κ) g̃_{t-1} + κ g_t (eq. (4)) feeding
// AdamW with bias correction and no noise correction.
type DiSK struct {
	H DiSKHypers
	T int       // t, the index of the next step
	G []float64 // g̃_{t-1}
	M []float64 // m_{t-1}
	V []float64 // v_{t-1}
}

// NewDiSK returns DiSK over n coordinates with g̃ = m = v = 0.
func NewDiSK(h DiSKHypers, n int) *DiSK {
	return &DiSK{H: h, G: make([]float64, n), M: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g; sigmaW2 is
// unused, as DiSK does not correct for the noise.
func (o *DiSK) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	for i := range theta {
		o.G[i] = (1-h.Kappa)*o.G[i] + h.Kappa*g[i]                            // g̃_t
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*o.G[i]                          // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(o.G[i]*o.G[i])                 // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))                         // m̂_t
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))                         // v̂_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vHat)+h.Eps) // θ_{t+1}
	}
	o.T++
}

// DPAdamW is AdamW with bias correction run directly on the privatized
// gradient: no filter, no noise correction.
type DPAdamW struct {
	H AdamW
	T int       // t, the index of the next step
	M []float64 // m_{t-1}
	V []float64 // v_{t-1}
}

// NewDPAdamW returns DP-AdamW over n coordinates with m = v = 0.
func NewDPAdamW(h AdamW, n int) *DPAdamW {
	return &DPAdamW{H: h, M: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g; sigmaW2 is unused.
func (o *DPAdamW) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	for i := range theta {
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*g[i]                            // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(g[i]*g[i])                     // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))                         // m̂_t
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))                         // v̂_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vHat)+h.Eps) // θ_{t+1}
	}
	o.T++
}

// DPSGD is Algorithm 1's update θ_{t+1} = θ_t − η g_t.
type DPSGD struct {
	Lr float64 // η; the paper's experiments default to 0.1
	T  int     // t, the index of the next step
}

// NewDPSGD returns DP-SGD with step size lr.
func NewDPSGD(lr float64) *DPSGD { return &DPSGD{Lr: lr} }

// Step runs step t on theta with the privatized gradient g; sigmaW2 is unused.
func (o *DPSGD) Step(theta, g []float64, sigmaW2 float64) {
	for i := range theta {
		theta[i] = theta[i] - o.Lr*g[i] // θ_{t+1} = θ_t − η g_t
	}
	o.T++
}

// DiSKCorrAttenuation is κ/(2 − κ), the steady-state factor by which DiSK's
// EMA scales the DP noise variance (Appendix B.6, A_state(κ)).
func DiSKCorrAttenuation(kappa float64) float64 { return kappa / (2 - kappa) }

// DiSKCorr is DiSK-CORR (Appendix B.6): DiSK with the second moment
// corrected by A_state(κ) σ_w² and floored at ε_v.
type DiSKCorr struct {
	DiSK
	EpsV float64 // ε_v
}

// NewDiSKCorr returns DiSK-CORR over n coordinates with g̃ = m = v = 0.
func NewDiSKCorr(h DiSKHypers, epsV float64, n int) *DiSKCorr {
	return &DiSKCorr{DiSK: *NewDiSK(h, n), EpsV: epsV}
}

// Step runs step t on theta with the privatized gradient g.
func (o *DiSKCorr) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	sigmaFilt2 := DiSKCorrAttenuation(h.Kappa) * sigmaW2
	for i := range theta {
		o.G[i] = (1-h.Kappa)*o.G[i] + h.Kappa*g[i]                            // g̃_t
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*o.G[i]                          // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(o.G[i]*o.G[i])                 // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))                         // m̂_t
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))                         // v̂_t
		vBar := math.Max(vHat-sigmaFilt2, o.EpsV)                             // v̄_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps) // θ_{t+1}
	}
	o.T++
}

// ABTrackHypers are the hypers of an alpha-beta tracker feeding AdamW.
type ABTrackHypers struct {
	AdamW
	Alpha, Beta float64 // the gains of the level and of the trend
	EpsV        float64 // ε_v
}

// DefaultABTrack returns α = 0.5, β = 0.05, ε_v = 1e-8 and AdamW defaults.
func DefaultABTrack() ABTrackHypers {
	return ABTrackHypers{AdamW: DefaultAdamW(), Alpha: 0.5, Beta: 0.05, EpsV: 1e-8}
}

// ABTrackAttenuation is the variance reduction ratio of the level of an
// alpha-beta filter with unit time step (Kalata 1984; Benedict and
// Bordner 1962): (2α² + 2β − 3αβ) / (α(4 − 2α − β)).
func ABTrackAttenuation(alpha, beta float64) float64 {
	return (2*alpha*alpha + 2*beta - 3*alpha*beta) / (alpha * (4 - 2*alpha - beta))
}

// ABTrack is AdamW on the level of an alpha-beta tracker of g: predict
// p = l + s, innovation ν = g − p, l = p + α ν, s = s + β ν, with the second
// moment corrected by the level's attenuation.
type ABTrack struct {
	H ABTrackHypers
	T int       // t, the index of the next step
	L []float64 // the level
	S []float64 // the trend
	M []float64
	V []float64
}

// NewABTrack returns the tracker over n coordinates with every state 0.
func NewABTrack(h ABTrackHypers, n int) *ABTrack {
	return &ABTrack{H: h, L: make([]float64, n), S: make([]float64, n), M: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g.
func (o *ABTrack) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	sigmaFilt2 := ABTrackAttenuation(h.Alpha, h.Beta) * sigmaW2
	for i := range theta {
		p := o.L[i] + o.S[i]
		nu := g[i] - p
		o.L[i] = p + h.Alpha*nu
		o.S[i] = o.S[i] + h.Beta*nu
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*o.L[i]
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(o.L[i]*o.L[i])
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))
		vBar := math.Max(vHat-sigmaFilt2, h.EpsV)
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps)
	}
	o.T++
}
