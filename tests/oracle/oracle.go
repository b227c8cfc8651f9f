// Package oracle holds hand-written float64 reference implementations of the
// optimizers in the FiBeR paper: FiBeR (Algorithm 2) and its ablations
// (FiBeR_NO_CORR, FiBeR_BC_CORR, the finite-time correction of Appendix D),
// DiSK (the EMA filter of eq. (4) fed to AdamW) and DiSK-CORR (Appendix
// B.6), DP-Adam, DP-AdamW, DP-AdamBC (Tang et al. 2024) and DP-SGD
// (Algorithm 1), a DOPPLER-style second-order low-pass filter (Zhang et al.
// 2024) with the noise gain of an ARMA(2,1) process, an alpha-beta
// tracker with the attenuation of its level from the tracking literature,
// DP-Lion (Chen et al. 2023), Schedule-Free AdamW (Defazio et al. 2024),
// AdEMAMix (Pagliardini et al. 2025; ademamix.go),
// BLT DP-SGD and BLT DP-Adam, whose gradient carries correlated noise
// from a buffered linear Toeplitz filter (Dvijotham et al. 2024; blt.go),
// LAMB and LARS, which step each tensor by its own norms (reduce.go), and
// Adam with Adafactor's factored second moment, states per row and per
// column of each tensor (Shazeer & Stern 2018; factored.go).
//
// The code is transcribed from the paper's equations and never from
// fibergen's DSL, IR or generated code, so that a bug shared by every
// fibergen target cannot hide from the tests. Everything is float64: the
// oracle is the mathematical reference that fibergen's float32 code
// approximates. Each optimizer keeps its state per coordinate and advances
// it with Step(theta, g, sigmaW2), where g is the privatized gradient g_t
// and sigmaW2 the per-coordinate DP noise variance σ_w² — except the BLT
// optimizers, which privatize g themselves from the standard normal draws
// the caller supplies, as the kernel's noise block does.
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
// observation that produces g_t; they do not enter the update of θ, and
// Gamma places the look-ahead point of the next observation.
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
	H         FiBeRHypers
	T         int       // t, the index of the next step (from 0)
	G         []float64 // g̃_{t-1}, the filtered gradient
	R         []float64 // r_{t-1}, the smoothed innovation
	M         []float64 // m_{t-1}
	V         []float64 // v_{t-1}
	Lookahead []float64 // θ_t + γ d_{t-1} (LookaheadPoint), written by step t−1; 0 before step 0
}

// NewFiBeR returns FiBeR over n coordinates with g̃ = r = m = v = 0 and the
// look-ahead point 0.
func NewFiBeR(h FiBeRHypers, n int) *FiBeR {
	return &FiBeR{H: h, G: make([]float64, n), R: make([]float64, n), M: make([]float64, n), V: make([]float64, n),
		Lookahead: make([]float64, n)}
}

// LookaheadPoint is the point θ_{t+1} + γ d_t, d_t = θ_{t+1} − θ_t, where the
// two-point observation of step t+1 evaluates its first gradient (Algorithm
// 2, eq. (2): u_{t+1} = a ∇f(θ_{t+1} + γ d_t) + (1 − a) ∇f(θ_{t+1})).
func LookaheadPoint(thetaNext, theta, gamma float64) float64 {
	return thetaNext + gamma*(thetaNext-theta)
}

// Step runs step t on theta with the privatized gradient g.
func (o *FiBeR) Step(theta, g []float64, sigmaW2 float64) {
	o.step(theta, g, Attenuation(o.H.Omega)*sigmaW2) // σ²_filt = A(ω) σ_w²
}

// step runs Algorithm 2 with the second moment reduced by sigmaFilt2, the
// DP-noise variance the correction assumes in g̃_t, floored at ε_v.
func (o *FiBeR) step(theta, g []float64, sigmaFilt2 float64) {
	o.stepFloored(theta, g, sigmaFilt2, func(float64) float64 { return o.H.EpsV })
}

// stepFloored runs Algorithm 2 with the second moment reduced by sigmaFilt2
// and floored at floor(v̂_t).
func (o *FiBeR) stepFloored(theta, g []float64, sigmaFilt2 float64, floor func(vHat float64) float64) {
	h, t := o.H, float64(o.T)
	for i := range theta {
		nu := g[i] - o.G[i]                                                   // ν_t = g_t − g̃_{t-1}
		o.R[i] = (1-h.Omega)*o.R[i] + h.Omega*nu                              // r_t = (1−ω) r_{t-1} + ω ν_t
		o.G[i] = o.G[i] + o.R[i]                                              // g̃_t = g̃_{t-1} + r_t
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*o.G[i]                          // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(o.G[i]*o.G[i])                 // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))                         // m̂_t = m_t / (1 − β1^{t+1})
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))                         // v̂_t = v_t / (1 − β2^{t+1})
		vBar := math.Max(vHat-sigmaFilt2, floor(vHat))                        // v̄_t = max(v̂_t − σ²_filt, floor)
		prev := theta[i]                                                      // θ_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps) // θ_{t+1}
		o.Lookahead[i] = LookaheadPoint(theta[i], prev, h.Gamma)              // θ_{t+1} + γ d_t
	}
	o.T++
}

// CosineSchedule is linear warmup then half a cosine: the learning rate of
// step t is LrMin + (Lr − LrMin)·w·(1 + cos(π p))/2 with the warmup factor
// w = min((t+1)/Warmup, 1) and the cosine's progress
// p = min(max(t+1 − Warmup, 0)/max(Steps − Warmup, 1), 1).
type CosineSchedule struct {
	Lr, LrMin, Warmup, Steps float64
}

// At is the learning rate of step t.
func (s CosineSchedule) At(t int) float64 {
	step := float64(t + 1)
	w := math.Min(step/s.Warmup, 1)
	p := math.Min(math.Max(step-s.Warmup, 0)/math.Max(s.Steps-s.Warmup, 1), 1)
	return s.LrMin + (s.Lr-s.LrMin)*w*(1+math.Cos(math.Pi*p))/2
}

// FiBeRCosine is FiBeR whose learning rate follows Schedule (H.Lr is set
// before every step).
type FiBeRCosine struct {
	*FiBeR
	Schedule CosineSchedule
}

// Step runs step t with the learning rate Schedule.At(t).
func (o FiBeRCosine) Step(theta, g []float64, sigmaW2 float64) {
	o.H.Lr = o.Schedule.At(o.T)
	o.FiBeR.Step(theta, g, sigmaW2)
}

// DiSKHypers are DiSK's hypers; Gamma shapes only the observation and
// places its look-ahead point.
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
	H         DiSKHypers
	T         int       // t, the index of the next step
	G         []float64 // g̃_{t-1}
	M         []float64 // m_{t-1}
	V         []float64 // v_{t-1}
	Lookahead []float64 // θ_t + γ d_{t-1}, as FiBeR's
}

// NewDiSK returns DiSK over n coordinates with g̃ = m = v = 0 and the
// look-ahead point 0.
func NewDiSK(h DiSKHypers, n int) *DiSK {
	return &DiSK{H: h, G: make([]float64, n), M: make([]float64, n), V: make([]float64, n), Lookahead: make([]float64, n)}
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
		prev := theta[i]                                                      // θ_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vHat)+h.Eps) // θ_{t+1}
		o.Lookahead[i] = LookaheadPoint(theta[i], prev, h.Gamma)              // θ_{t+1} + γ d_t
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
		prev := theta[i]                                                      // θ_t
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps) // θ_{t+1}
		o.Lookahead[i] = LookaheadPoint(theta[i], prev, h.Gamma)              // θ_{t+1} + γ d_t
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

// DPAdam is Adam (Kingma and Ba 2015, Algorithm 1) with bias correction
// run directly on the privatized gradient, with torch.optim.Adam's coupled
// L2 weight decay: the moments see g_t + λ θ_t, and the update has no
// decoupled decay.
type DPAdam struct {
	H AdamW     // Wd is the coupled L2 coefficient
	T int       // t, the index of the next step
	M []float64 // m_{t-1}
	V []float64 // v_{t-1}
}

// NewDPAdam returns DP-Adam over n coordinates with m = v = 0.
func NewDPAdam(h AdamW, n int) *DPAdam {
	return &DPAdam{H: h, M: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g; sigmaW2 is unused.
func (o *DPAdam) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	for i := range theta {
		gw := g[i] + h.Wd*theta[i]                              // g_t + λ θ_t
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*gw                // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(gw*gw)           // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))           // m̂_t
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))           // v̂_t
		theta[i] = theta[i] - h.Lr*mHat/(math.Sqrt(vHat)+h.Eps) // θ_{t+1}
	}
	o.T++
}

// DPAdamBC is DP-AdamBC (Tang, Shpilevskiy and Lécuyer 2024, Algorithm 1):
// DP-AdamW whose bias-corrected second moment is reduced by the whole DP
// noise variance Φ = σ_w² and floored at γ' = ε_v, v̄_t = max(v̂_t − σ_w², ε_v);
// the FiBeR paper's correction with A = 1 and no filter.
type DPAdamBC struct {
	DPAdamW
	EpsV float64 // ε_v, Tang et al.'s γ'
}

// NewDPAdamBC returns DP-AdamBC over n coordinates with m = v = 0.
func NewDPAdamBC(h AdamW, epsV float64, n int) *DPAdamBC {
	return &DPAdamBC{DPAdamW: *NewDPAdamW(h, n), EpsV: epsV}
}

// Step runs step t on theta with the privatized gradient g.
func (o *DPAdamBC) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	for i := range theta {
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*g[i]                            // m_t
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(g[i]*g[i])                     // v_t
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))                         // m̂_t
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))                         // v̂_t
		vBar := math.Max(vHat-sigmaW2, o.EpsV)                                // v̄_t = max(v̂_t − Φ, γ')
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps) // θ_{t+1}
	}
	o.T++
}

// FiBeRNoCorr is the FiBeR paper's FiBeR_NO_CORR ablation (Section 5):
// Algorithm 2 with the correction disabled by A(ω) = 0, v̄_t = max(v̂_t, ε_v).
type FiBeRNoCorr struct{ FiBeR }

// NewFiBeRNoCorr returns FiBeR_NO_CORR over n coordinates with every state 0.
func NewFiBeRNoCorr(h FiBeRHypers, n int) *FiBeRNoCorr {
	return &FiBeRNoCorr{*NewFiBeR(h, n)}
}

// Step runs step t on theta with the privatized gradient g; sigmaW2 is
// unused.
func (o *FiBeRNoCorr) Step(theta, g []float64, sigmaW2 float64) { o.step(theta, g, 0) }

// FiBeRBCCorr is the FiBeR paper's FiBeR_BC_CORR ablation (Section 5):
// Algorithm 2 with Tang et al.'s correction, which ignores the filter's
// attenuation: v̄_t = max(v̂_t − σ_w², ε_v), that is A = 1.
type FiBeRBCCorr struct{ FiBeR }

// NewFiBeRBCCorr returns FiBeR_BC_CORR over n coordinates with every state 0.
func NewFiBeRBCCorr(h FiBeRHypers, n int) *FiBeRBCCorr {
	return &FiBeRBCCorr{*NewFiBeR(h, n)}
}

// Step runs step t on theta with the privatized gradient g.
func (o *FiBeRBCCorr) Step(theta, g []float64, sigmaW2 float64) { o.step(theta, g, sigmaW2) }

// FiBeRNoiseFloor is fiber_nfloor: Algorithm 2 with the floor scaled by
// the filtered noise, v̄_t = max(v̂_t − A(ω)σ_w², max(κ_v A(ω)σ_w², ε_v)).
type FiBeRNoiseFloor struct {
	FiBeR
	KappaV float64 // κ_v
}

// NewFiBeRNoiseFloor returns fiber_nfloor over n coordinates with every state 0.
func NewFiBeRNoiseFloor(h FiBeRHypers, kappaV float64, n int) *FiBeRNoiseFloor {
	return &FiBeRNoiseFloor{*NewFiBeR(h, n), kappaV}
}

// Step runs step t on theta with the privatized gradient g.
func (o *FiBeRNoiseFloor) Step(theta, g []float64, sigmaW2 float64) {
	filt := Attenuation(o.H.Omega) * sigmaW2
	floor := math.Max(o.KappaV*filt, o.H.EpsV)
	o.stepFloored(theta, g, filt, func(float64) float64 { return floor })
}

// FiBeRRelFloor is fiber_rfloor: Algorithm 2 with a floor relative to the
// second moment, v̄_t = max(v̂_t − A(ω)σ_w², max(ρ v̂_t, ε_v)).
type FiBeRRelFloor struct {
	FiBeR
	Rho float64 // ρ
}

// NewFiBeRRelFloor returns fiber_rfloor over n coordinates with every state 0.
func NewFiBeRRelFloor(h FiBeRHypers, rho float64, n int) *FiBeRRelFloor {
	return &FiBeRRelFloor{*NewFiBeR(h, n), rho}
}

// Step runs step t on theta with the privatized gradient g.
func (o *FiBeRRelFloor) Step(theta, g []float64, sigmaW2 float64) {
	o.stepFloored(theta, g, Attenuation(o.H.Omega)*sigmaW2, func(vHat float64) float64 { return math.Max(o.Rho*vHat, o.H.EpsV) })
}

// FiniteAttenuation is A_t(ω), the variance of the innovation filter's
// output g̃_t per unit σ_w² after the noise of steps 0..t from zero state
// (Appendix D, Lemma "Finite-time DP noise bound for the innovation
// filter"): A_t = e1ᵀ Σ_t e1 with Σ_t = M Σ_{t-1} Mᵀ + ω² b bᵀ, Σ_{-1} = 0,
// M = [[1−ω, 1−ω], [−ω, 1−ω]] on (g̃, r) and b = (1, 1). It is 0 for t < 0.
func FiniteAttenuation(omega float64, t int) float64 {
	var s finiteSigma
	for range t + 1 {
		s.next(omega)
	}
	return s[0][0]
}

// finiteSigma is the lemma's Σ_t per unit σ_w².
type finiteSigma [2][2]float64

// next advances Σ_{t-1} to Σ_t = M Σ_{t-1} Mᵀ + ω² b bᵀ.
func (s *finiteSigma) next(omega float64) {
	m := [2][2]float64{{1 - omega, 1 - omega}, {-omega, 1 - omega}}
	var ms, out finiteSigma // M Σ, then M Σ Mᵀ + Q
	for i := range 2 {
		for j := range 2 {
			ms[i][j] = m[i][0]*s[0][j] + m[i][1]*s[1][j]
		}
	}
	q := omega * omega // Q = ω² b bᵀ, every entry ω² since b = (1, 1)
	for i := range 2 {
		for j := range 2 {
			out[i][j] = ms[i][0]*m[j][0] + ms[i][1]*m[j][1] + q
		}
	}
	*s = out
}

// FiBeRFT is FiBeR with the finite-time correction of Appendix D: step t
// subtracts A_t(ω) σ_w², the variance the noise of steps 0..t has built up
// in g̃_t, instead of its limit A(ω) σ_w².
type FiBeRFT struct {
	FiBeR
	sigma  finiteSigma // Σ_{sigmaT}
	sigmaT int         // the step Σ belongs to; -1 for Σ_{-1} = 0
}

// NewFiBeRFT returns FiBeR-FT over n coordinates with every state 0.
func NewFiBeRFT(h FiBeRHypers, n int) *FiBeRFT {
	return &FiBeRFT{FiBeR: *NewFiBeR(h, n), sigmaT: -1}
}

// Step runs step t on theta with the privatized gradient g. Σ_t advances
// with the steps; after T was moved, it is recomputed from Σ_{-1} = 0.
func (o *FiBeRFT) Step(theta, g []float64, sigmaW2 float64) {
	if o.sigmaT >= o.T {
		o.sigma, o.sigmaT = finiteSigma{}, -1
	}
	for o.sigmaT < o.T {
		o.sigma.next(o.H.Omega)
		o.sigmaT++
	}
	o.step(theta, g, o.sigma[0][0]*sigmaW2) // σ²_filt = A_t(ω) σ_w²
}

// DopplerHypers are the hypers of a second-order low-pass filter
// y_t = b0 g_t + b1 g_{t-1} − a1 y_{t-1} − a2 y_{t-2} feeding AdamW.
type DopplerHypers struct {
	AdamW
	B0, B1 float64 // the feed-forward coefficients
	A1, A2 float64 // the feedback coefficients, with the sign convention above
	EpsV   float64 // ε_v
}

// DefaultDoppler returns a double pole at 0.5 (a1 = −1, a2 = 1/4), a zero at
// −1 and unit DC gain (b0 = b1 = 1/8), ε_v = 1e-8 and AdamW defaults.
func DefaultDoppler() DopplerHypers {
	return DopplerHypers{AdamW: DefaultAdamW(), B0: 0.125, B1: 0.125, A1: -1, A2: 0.25, EpsV: 1e-8}
}

// DopplerAttenuation is the variance of the filter's output per unit
// variance of white noise at its input: the variance γ0 of the ARMA(2,1)
// process y_t + a1 y_{t-1} + a2 y_{t-2} = b0 w_t + b1 w_{t-1}. With
// E[y_t w_t] = b0 and E[y_t w_{t-1}] = b1 − a1 b0, the Yule–Walker
// equations γ0 = −a1 γ1 − a2 γ2 + b0² + b1 (b1 − a1 b0),
// γ1 = −a1 γ0 − a2 γ1 + b0 b1 and γ2 = −a1 γ1 − a2 γ0 give
// γ0 = ((b0² + b1²)(1 + a2) − 2 a1 b0 b1) / ((1 − a2)((1 + a2)² − a1²)).
func DopplerAttenuation(b0, b1, a1, a2 float64) float64 {
	return ((b0*b0+b1*b1)*(1+a2) - 2*a1*b0*b1) / ((1 - a2) * ((1+a2)*(1+a2) - a1*a1))
}

// DopplerResponse returns, for the filter y_t = b0 x_t + b1 x_{t-1} −
// a1 y_{t-1} − a2 y_{t-2} from rest, its step response c_t = Σ_{k≤t} h_k and
// the variance gain of white noise over steps 0..t, A_t = Σ_{k≤t} h_k², from
// its impulse response h (h_k = b0 δ_k + b1 δ_{k−1} − a1 h_{k−1} − a2 h_{k−2}).
func DopplerResponse(b0, b1, a1, a2 float64, t int) (c, at float64) {
	var h1, h2 float64 // h_{k-1}, h_{k-2}
	for k := 0; k <= t; k++ {
		x, x1 := 0.0, 0.0 // δ_k, δ_{k−1}
		if k == 0 {
			x = 1
		}
		if k == 1 {
			x1 = 1
		}
		hk := b0*x + b1*x1 - a1*h1 - a2*h2
		c, at = c+hk, at+hk*hk
		h1, h2 = hk, h1
	}
	return c, at
}

// Doppler is AdamW on the output of a DOPPLER-style second-order low-pass
// filter of g (Zhang et al. 2024), divided by the filter's step response
// c_t, with the second moment corrected by the noise variance in y_t/c_t,
// A_t σ_w²/c_t², and floored at ε_v.
type Doppler struct {
	H  DopplerHypers
	T  int       // t, the index of the next step
	Y  []float64 // y_{t-1}
	Y1 []float64 // y_{t-2}
	G1 []float64 // g_{t-1}
	M  []float64
	V  []float64
}

// NewDoppler returns the filter over n coordinates with every state 0.
func NewDoppler(h DopplerHypers, n int) *Doppler {
	return &Doppler{H: h, Y: make([]float64, n), Y1: make([]float64, n), G1: make([]float64, n),
		M: make([]float64, n), V: make([]float64, n)}
}

// Step runs step t on theta with the privatized gradient g.
func (o *Doppler) Step(theta, g []float64, sigmaW2 float64) {
	h, t := o.H, float64(o.T)
	c, at := DopplerResponse(h.B0, h.B1, h.A1, h.A2, o.T)
	sigmaFilt2 := at * sigmaW2 / (c * c)
	for i := range theta {
		y := h.B0*g[i] + h.B1*o.G1[i] - h.A1*o.Y[i] - h.A2*o.Y1[i] // y_t
		o.Y1[i], o.Y[i], o.G1[i] = o.Y[i], y, g[i]
		yHat := y / c // y_t / c_t
		o.M[i] = h.Beta1*o.M[i] + (1-h.Beta1)*yHat
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(yHat*yHat)
		mHat := o.M[i] / (1 - math.Pow(h.Beta1, t+1))
		vHat := o.V[i] / (1 - math.Pow(h.Beta2, t+1))
		vBar := math.Max(vHat-sigmaFilt2, h.EpsV)
		theta[i] = (1-h.Lr*h.Wd)*theta[i] - h.Lr*mHat/(math.Sqrt(vBar)+h.Eps)
	}
	o.T++
}

// Lion holds Lion's hypers (Chen et al. 2023, Algorithm 2).
type Lion struct {
	Lr, Beta1, Beta2, Wd float64 // η, β1, β2, λ
}

// DPLion is Lion on the privatized gradient: c_t = β1 m_{t-1} + (1 − β1) g_t,
// θ_t = θ_{t-1} − η (sign(c_t) + λ θ_{t-1}), m_t = β2 m_{t-1} + (1 − β2) g_t.
type DPLion struct {
	H Lion
	M []float64
	T int
}

// NewDPLion returns DP-Lion over n coordinates with m = 0.
func NewDPLion(h Lion, n int) *DPLion { return &DPLion{H: h, M: make([]float64, n)} }

// Step runs step t on theta with the privatized gradient g; sigmaW2 is unused.
func (o *DPLion) Step(theta, g []float64, sigmaW2 float64) {
	h := o.H
	for i := range theta {
		c := h.Beta1*o.M[i] + (1-h.Beta1)*g[i]
		s := 0.0
		switch {
		case c > 0:
			s = 1
		case c < 0:
			s = -1
		}
		theta[i] -= h.Lr * (s + h.Wd*theta[i])
		o.M[i] = h.Beta2*o.M[i] + (1-h.Beta2)*g[i]
	}
	o.T++
}

// ScheduleFreeHypers are Schedule-Free AdamW's hypers (Defazio et al. 2024,
// Algorithm 1): AdamW's, where β1 weighs the average in the gradient's
// point, and Warmup, the steps of linear warm-up of the step size.
type ScheduleFreeHypers struct {
	AdamW
	Warmup float64
}

// DefaultScheduleFree returns the defaults of the paper's Schedule-Free
// AdamW: η = 0.0025, β = (0.9, 0.999), ε = 1e-8, λ = 0, no warm-up.
func DefaultScheduleFree() ScheduleFreeHypers {
	return ScheduleFreeHypers{AdamW: AdamW{Lr: 0.0025, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}}
}

// ScheduleFree is Algorithm 1 of "The Road Less Scheduled" on the
// privatized gradient, 0-based (step t is the paper's t+1): with
// γ_t = η √(1 − β2^(t+1)) min(1, (t+1)/max(T_w, 1)),
//
//	v_t     = β2 v_{t−1} + (1 − β2) g_t²
//	z_{t+1} = z_t − γ_t (g_t / (√v_t + ε) + λ y_t)
//	x_{t+1} = (1 − c) x_t + c z_{t+1},  c = γ_t² / Σ_{i≤t} γ_i²
//	y_{t+1} = (1 − β1) z_{t+1} + β1 x_{t+1}
//
// with y (theta) the point where the gradient is taken and x_0 = z_0 = y_0.
// y is computed as x + (1 − β1)(z − x), the same interpolation (torch's
// lerp), which keeps y = θ_0 exactly at η = 0; the other order differs by
// cancellation where z and x nearly agree, which the float64 comparison of
// the bound's arithmetic with the oracle would take for a disagreement.
type ScheduleFree struct {
	H       ScheduleFreeHypers
	Z, X, V []float64
	T       int // t, the index of the next step
}

// NewScheduleFree returns Schedule-Free AdamW over n coordinates; z and x
// take θ at the first step.
func NewScheduleFree(h ScheduleFreeHypers, n int) *ScheduleFree {
	return &ScheduleFree{H: h, Z: make([]float64, n), X: make([]float64, n), V: make([]float64, n)}
}

// Gamma is the step size γ_t of step t.
func (h ScheduleFreeHypers) Gamma(t int) float64 {
	s := float64(t + 1)
	return h.Lr * math.Sqrt(1-math.Pow(h.Beta2, s)) * math.Min(1, s/math.Max(h.Warmup, 1))
}

// Weight is c, the weight of z_{t+1} in x_{t+1}: γ_t² / Σ_{i≤t} γ_i², 0
// where every γ is 0.
func (h ScheduleFreeHypers) Weight(t int) float64 {
	sum := 0.0
	for i := 0; i <= t; i++ {
		sum += h.Gamma(i) * h.Gamma(i)
	}
	if sum == 0 {
		return 0
	}
	return h.Gamma(t) * h.Gamma(t) / sum
}

// Step runs step t on theta (y_t) with the privatized gradient g; sigmaW2
// is unused.
func (o *ScheduleFree) Step(theta, g []float64, sigmaW2 float64) {
	h := o.H
	if o.T == 0 {
		copy(o.Z, theta)
		copy(o.X, theta)
	}
	gamma, c := h.Gamma(o.T), h.Weight(o.T)
	for i := range theta {
		o.V[i] = h.Beta2*o.V[i] + (1-h.Beta2)*(g[i]*g[i])
		o.Z[i] -= gamma * (g[i]/(math.Sqrt(o.V[i])+h.Eps) + h.Wd*theta[i])
		o.X[i] = (1-c)*o.X[i] + c*o.Z[i]
		theta[i] = o.X[i] + (1-h.Beta1)*(o.Z[i]-o.X[i]) // y = (1 − β1) z + β1 x, as an interpolation from x
	}
	o.T++
}
