package oracle

import "math"

// BLT is a buffered linear Toeplitz noise filter (Dvijotham, McMahan,
// Pillutla, Steinke and Thakurta 2024): the correlated noise of step t is
// w_t = Σ_{s≤t} c_{t−s} z_s with c(x) = 1 + Σ_i ω̂_i x / (1 − θ̂_i x), z_s
// fresh standard normals. One buffer per term keeps the past draws,
// s_{i,t} = θ̂_i s_{i,t−1} + z_t, and w_t = z_t + Σ_i ω̂_i s_{i,t−1}.
type BLT struct {
	Decay  []float64 // θ̂_i, the buffers' decays
	Weight []float64 // ω̂_i, the buffers' weights in w
}

// Coefficient is c_k of the filter in closed form: 1 at k = 0, else
// Σ_i ω̂_i θ̂_i^(k−1), the power series of ω̂_i x / (1 − θ̂_i x).
func (b BLT) Coefficient(k int) float64 {
	if k == 0 {
		return 1
	}
	c := 0.0
	for i, w := range b.Weight {
		c += w * math.Pow(b.Decay[i], float64(k-1))
	}
	return c
}

// BLTNoise runs a BLT filter per coordinate and privatizes gradients with
// its noise, as a correlated-noise optimizer's step does before the update.
type BLTNoise struct {
	BLT
	S    [][]float64            // s_{i,t−1}, [buffer][coordinate], zero before step 0
	Draw func(t, i int) float64 // z of coordinate i at step t; nil draws z = 0 (g is privatized already)
}

// NewBLTNoise returns the filter b over n coordinates with zero buffers.
func NewBLTNoise(b BLT, n int) BLTNoise {
	s := make([][]float64, len(b.Decay))
	for i := range s {
		s[i] = make([]float64, n)
	}
	return BLTNoise{BLT: b, S: s}
}

// Privatize returns g + σ_w w_t per coordinate for step t and advances the
// buffers by z_t.
func (o BLTNoise) Privatize(t int, g []float64, sigmaW2 float64) []float64 {
	out := make([]float64, len(g))
	sigmaW := math.Sqrt(sigmaW2)
	for i := range g {
		z := 0.0
		if o.Draw != nil {
			z = o.Draw(t, i)
		}
		w := z // w_t = z_t + Σ ω̂_k s_{k,t−1}
		for k, wk := range o.Weight {
			w += wk * o.S[k][i]
		}
		for k, d := range o.Decay {
			o.S[k][i] = d*o.S[k][i] + z // s_{k,t} = θ̂_k s_{k,t−1} + z_t
		}
		out[i] = g[i] + sigmaW*w
	}
	return out
}

// SGDMomentum holds heavy-ball SGD's hypers.
type SGDMomentum struct {
	Lr, Mu float64 // η, μ
}

// BLTSGD is SGD with heavy-ball momentum on a gradient privatized with BLT
// noise: g_t = x_t + σ_w w_t, m_t = μ m_{t−1} + g_t, θ_{t+1} = θ_t − η m_t,
// x_t the clipped mean gradient (DP-FTRL with momentum as a matrix
// factorization, Kairouz et al. 2021; Choquette-Choo et al. 2023).
type BLTSGD struct {
	H SGDMomentum
	BLTNoise
	T int       // t, the index of the next step
	M []float64 // m_{t−1}
}

// NewBLTSGD returns BLT DP-SGD over n coordinates with m = 0 and zero
// buffers.
func NewBLTSGD(h SGDMomentum, b BLT, n int) *BLTSGD {
	return &BLTSGD{H: h, BLTNoise: NewBLTNoise(b, n), M: make([]float64, n)}
}

// Step runs step t on theta with the clipped mean gradient x (with Draw
// nil: the privatized gradient).
func (o *BLTSGD) Step(theta, x []float64, sigmaW2 float64) {
	g := o.Privatize(o.T, x, sigmaW2)
	for i := range theta {
		o.M[i] = o.H.Mu*o.M[i] + g[i]       // m_t
		theta[i] = theta[i] - o.H.Lr*o.M[i] // θ_{t+1}
	}
	o.T++
}

// BLTAdam is DP-Adam (coupled L2 weight decay, DPAdam) on a gradient
// privatized with BLT noise.
type BLTAdam struct {
	*DPAdam
	BLTNoise
}

// NewBLTAdam returns BLT DP-Adam over n coordinates with m = v = 0 and
// zero buffers.
func NewBLTAdam(h AdamW, b BLT, n int) *BLTAdam {
	return &BLTAdam{DPAdam: NewDPAdam(h, n), BLTNoise: NewBLTNoise(b, n)}
}

// Step runs step t on theta with the clipped mean gradient x (with Draw
// nil: the privatized gradient).
func (o *BLTAdam) Step(theta, x []float64, sigmaW2 float64) {
	o.DPAdam.Step(theta, o.Privatize(o.DPAdam.T, x, sigmaW2), sigmaW2)
}
