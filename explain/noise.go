package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/corrnoise"
	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir"
)

// Participation is the schema under which explain derives a noise block's
// sensitivity: Steps steps, an example in at most one batch of every
// MinSep consecutive steps (docs/correlated-noise.md).
type Participation struct {
	Steps  int `json:"steps"`
	MinSep int `json:"min_separation"`
}

// DefaultParticipation is explain's schema without --steps and --min-sep:
// 1000 steps, each example once.
var DefaultParticipation = Participation{Steps: 1000, MinSep: 1000}

// NoiseFilter is a noise block's filter at the setting explained
// (docs/dsl.md, "Correlated noise"), and the figures of the factorization
// it makes under a participation schema.
type NoiseFilter struct {
	Buffers []string `json:"buffers"`
	// SpectralRadius is that of the buffers' transition M: below 1.
	SpectralRadius float64 `json:"spectral_radius"`
	// Coefficients are the first c_k of w_t = Σ c_{t−s} z_s, the noise
	// filter C⁻¹, and Inverse those of the strategy C (shownCoefficients
	// of each; the JSON form holds them for every step).
	Coefficients []float64 `json:"coefficients"`
	Inverse      []float64 `json:"inverse"`
	Participation
	Participations int `json:"participations"`
	// Loss is the sensitivity and the errors of the prefix sums in units
	// of σ_w²; DPSGD the same of independent noise, for comparison.
	Loss  corrnoise.Loss `json:"loss"`
	DPSGD corrnoise.Loss `json:"dp_sgd"`
}

// shownCoefficients is how many coefficients the text shows.
const shownCoefficients = 8

// describeNoise derives fn's noise filter at hypers h under p; nil
// without a noise block.
func describeNoise(fn *ir.Func, h []float64, p Participation) (*NoiseFilter, error) {
	if fn.Noise == nil {
		return nil, nil
	}
	m, _, _, _ := fn.NoiseModel(h)
	nf := &NoiseFilter{Buffers: fn.Noise.States, Participation: p, SpectralRadius: gain.SpectralRadius(m, len(fn.Noise.States))}
	nf.Coefficients = fn.NoiseCoefficients(h, p.Steps)
	nf.Inverse = fn.StrategyCoefficients(h, p.Steps) // what the accountant is told
	var err error
	if nf.Participations, err = corrnoise.Participations(p.Steps, p.MinSep); err != nil {
		return nil, err
	}
	if nf.Loss, err = corrnoise.Evaluate(nf.Inverse, nf.Coefficients, p.Steps, p.MinSep); err != nil {
		return nil, err
	}
	nf.DPSGD, err = corrnoise.DPSGD(p.Steps, p.MinSep)
	return nf, err
}

// printNoise writes the noise filter's section.
func printNoise(w io.Writer, nf *NoiseFilter) {
	if nf == nil {
		return
	}
	exact := "exact"
	if !nf.Loss.Exact {
		exact = "an upper bound"
	}
	fmt.Fprintf(w, "\nnoise filter (correlated noise: g = clipped mean + sigma_w * w; docs/correlated-noise.md):\n")
	if len(nf.Buffers) > 0 {
		fmt.Fprintf(w, "  buffers %s: spectral radius %.6g, below 1\n", strings.Join(nf.Buffers, " "), nf.SpectralRadius)
	}
	fmt.Fprintf(w, "  w_t = sum_s c_(t-s) z_s, c = %s\n", coefficientsText(nf.Coefficients))
	fmt.Fprintf(w, "  strategy C = its inverse:  %s\n", coefficientsText(nf.Inverse))
	fmt.Fprintf(w, "  over %d steps, each example at most once every %d steps (at most %d participation(s); explain --steps, --min-sep):\n",
		nf.Steps, nf.MinSep, nf.Participations)
	fmt.Fprintf(w, "    sensitivity %.6g (%s); DP-SGD's %.6g\n", nf.Loss.Sensitivity, exact, nf.DPSGD.Sensitivity)
	fmt.Fprintf(w, "    variance of the prefix sums, in sigma_w2: max %.6g, mean %.6g\n", nf.Loss.MaxError, nf.Loss.MeanError)
	fmt.Fprintf(w, "    at unit sensitivity: max %.6g, mean %.6g; DP-SGD max %.6g, mean %.6g (ratios %.4g, %.4g)\n",
		nf.Loss.Max(), nf.Loss.Mean(), nf.DPSGD.Max(), nf.DPSGD.Mean(), nf.Loss.Max()/nf.DPSGD.Max(), nf.Loss.Mean()/nf.DPSGD.Mean())
}

// coefficientsText prints the first shownCoefficients of c.
func coefficientsText(c []float64) string {
	var parts []string
	for _, x := range c[:min(len(c), shownCoefficients)] {
		parts = append(parts, fmt.Sprintf("%.6g", x))
	}
	if len(c) > shownCoefficients {
		parts = append(parts, "...")
	}
	return strings.Join(parts, " ")
}
