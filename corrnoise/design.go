package corrnoise

import (
	"fmt"
	"math"
)

// Objective is the error a design minimises at unit sensitivity.
type Objective int

const (
	// Max is the largest variance of a prefix sum (sens² × max error).
	Max Objective = iota
	// Mean is the mean variance of the prefix sums (sens² × mean error).
	Mean
)

func (o Objective) String() string {
	switch o {
	case Max:
		return "max"
	case Mean:
		return "mean"
	}
	return fmt.Sprintf("Objective(%d)", int(o))
}

// MarshalText writes "max" or "mean".
func (o Objective) MarshalText() ([]byte, error) {
	if o != Max && o != Mean {
		return nil, fmt.Errorf("corrnoise: unknown objective %v", o)
	}
	return []byte(o.String()), nil
}

// UnmarshalText reads "max" or "mean".
func (o *Objective) UnmarshalText(b []byte) (err error) {
	*o, err = ParseObjective(string(b))
	return err
}

// ParseObjective reads "max" or "mean".
func ParseObjective(s string) (Objective, error) {
	for _, o := range []Objective{Max, Mean} {
		if s == o.String() {
			return o, nil
		}
	}
	return 0, fmt.Errorf("corrnoise: unknown objective %q (want max or mean)", s)
}

// MaxBuffers is the most buffers Design takes: past it the partial
// fractions lose their digits and the papers' gains have long flattened.
const MaxBuffers = 8

// Mechanism is a designed BLT and its figures.
type Mechanism struct {
	Steps          int `json:"steps"`
	MinSep         int `json:"min_sep"`
	Participations int `json:"participations"`
	// Buffers is the number the design uses, at most BuffersAsked: a
	// buffer whose strategy and noise decays coincide adds nothing
	// (prune).
	BuffersAsked int       `json:"buffers_asked"`
	Buffers      int       `json:"buffers"`
	Objective    Objective `json:"-"`
	// Noise is the noise filter C⁻¹ as it runs: its decays and weights
	// are float32 values. Strategy is its inverse C.
	Noise    BLT  `json:"noise"`
	Strategy BLT  `json:"strategy"`
	Loss     Loss `json:"loss"`
	DPSGD    Loss `json:"dp_sgd"`
	// Dense is the optimal dense factorization for the objective where
	// CompareDense computed it (at most DenseSteps steps:
	// OptimalDenseEpochs or OptimalDenseEpochsMax over fixed epochs of
	// MinSep steps; MinSep = Steps is one participation), else nil.
	Dense *Dense `json:"dense,omitempty"`
}

// Ratio returns the design's loss over DP-SGD's, for its objective.
func (m Mechanism) Ratio() float64 { return m.Loss.Of(m.Objective) / m.DPSGD.Of(m.Objective) }

// Design returns the BLT noise filter with d buffers that minimises the
// objective at unit sensitivity over n steps with minimum separation b.
// The strategy's decays θ and the filter's θ̂ interlace, 1 > θ_1 > θ̂_1 >
// θ_2 > … > θ̂_d > 0, which makes every weight of the strategy positive
// and its coefficients positive and decreasing (McMahan, Xu & Zhang 2024,
// Hassle-free BLTs; Dvijotham et al. 2025, "An Inversion Theorem for
// Buffered Linear Toeplitz Matrices", Theorem 1): the sensitivity is
// exact (Sensitivity). The search is deterministic: Nelder–Mead from fixed
// starts on the logits of the interlaced decays (search).
func Design(n, b, d int, o Objective) (Mechanism, error) {
	k, err := Participations(n, b)
	if err != nil {
		return Mechanism{}, err
	}
	if err := checkDesign(d, o); err != nil {
		return Mechanism{}, err
	}
	p := newProblem(n, b, o)
	x, f := search(p, d)
	if math.IsInf(f, 1) || math.IsNaN(f) {
		return Mechanism{}, fmt.Errorf("corrnoise: no BLT with %d buffers meets the constraint over %d steps", d, n)
	}
	theta, thetaHat := decode(x)
	theta, thetaHat = prune(p, theta, thetaHat)
	_, noise, err := PairFromDecays(theta, thetaHat)
	if err != nil {
		return Mechanism{}, err
	}
	m := Mechanism{Steps: n, MinSep: b, Participations: k, BuffersAsked: d, Buffers: len(theta), Objective: o}
	return m, m.finish(noise)
}

// pruneLoss is the relative change of the loss below which a buffer of a
// design adds nothing.
const pruneLoss = 1e-6

// prune drops, one at a time, the adjacent decays of the interlaced
// sequence θ_1 > θ̂_1 > θ_2 > … (a pair (θ_i, θ̂_i) or (θ̂_i, θ_{i+1})) without
// which the loss grows by less than pruneLoss: a pole its zero all but
// cancels, where the search found fewer buffers as good (at b = 1, none:
// DP-SGD). Such a pair would only cost a buffer, and its near-equal decays
// do not survive float32 rounding. What is left still interlaces.
func prune(p *problem, theta, thetaHat []float64) ([]float64, []float64) {
	v := interleave(theta, thetaHat)
	for dropped := true; dropped && len(v) > 0; {
		dropped = false
		base := p.lossOf(split(v))
		for k := 0; k+1 < len(v); k++ {
			w := append(append([]float64(nil), v[:k]...), v[k+2:]...)
			if p.lossOf(split(w)) <= base+pruneLoss {
				v, dropped = w, true
				break
			}
		}
	}
	return split(v)
}

// interleave returns θ_1, θ̂_1, θ_2, θ̂_2, ….
func interleave(theta, thetaHat []float64) []float64 {
	v := make([]float64, 0, 2*len(theta))
	for i := range theta {
		v = append(v, theta[i], thetaHat[i])
	}
	return v
}

// split is interleave's inverse.
func split(v []float64) (theta, thetaHat []float64) {
	for k, x := range v {
		if k%2 == 0 {
			theta = append(theta, x)
		} else {
			thetaHat = append(thetaHat, x)
		}
	}
	return theta, thetaHat
}

// checkDesign checks the number of buffers and the objective.
func checkDesign(d int, o Objective) error {
	switch {
	case d < 1:
		return errNoBuffers
	case d > MaxBuffers:
		return fmt.Errorf("corrnoise: at most %d buffers, got %d", MaxBuffers, d)
	case o != Max && o != Mean:
		return fmt.Errorf("corrnoise: unknown objective %v", o)
	}
	return nil
}

// finish rounds the noise filter to float32, as the kernel runs it, and
// computes the figures of that filter and of the strategy it implies.
func (m *Mechanism) finish(designed BLT) error {
	m.Noise = roundFloat32(designed)
	c := m.Noise.Coefficients(m.Steps)
	r, err := Inverse(c)
	if err != nil {
		return err
	}
	if m.Loss, err = Evaluate(r, c, m.Steps, m.MinSep); err != nil {
		return err
	}
	if !m.Loss.Exact {
		return fmt.Errorf("corrnoise: the design's strategy, rounded to float32, has coefficients that are not non-negative and non-increasing: its sensitivity is only bounded (%.6g); try fewer buffers", m.Loss.Sensitivity)
	}
	if m.Strategy, err = m.Noise.Inverse(); err != nil {
		return err
	}
	if m.DPSGD, err = DPSGD(m.Steps, m.MinSep); err != nil {
		return err
	}
	return nil
}

// CompareDense sets m.Dense to the optimal dense factorization for m's
// objective and setting, where one is computed (at most DenseSteps
// steps; for the max objective that takes up to about a minute, so
// Design leaves it to the caller).
func (m *Mechanism) CompareDense() { m.Dense = denseFor(m.Steps, m.MinSep, m.Objective) }

// roundFloat32 rounds every decay and weight of b to float32.
func roundFloat32(b BLT) BLT {
	r := BLT{Decay: make([]float64, len(b.Decay)), Weight: make([]float64, len(b.Weight))}
	for i := range b.Decay {
		r.Decay[i] = float64(float32(b.Decay[i]))
		r.Weight[i] = float64(float32(b.Weight[i]))
	}
	return r
}
