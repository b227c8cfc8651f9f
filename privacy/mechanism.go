package privacy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Sampling is how each step's batch is drawn; it fixes the neighbouring
// relation and so what the noise multiplier is relative to.
type Sampling int

const (
	// Poisson: every example joins the batch independently with
	// probability q. Add/remove-one adjacency: the noise multiplier is
	// the noise standard deviation over the clip norm C (Opacus'
	// noise_multiplier, dp_accounting's PoissonSampledDpEvent).
	Poisson Sampling = iota
	// Fixed: a uniformly random batch of exactly qN examples, drawn
	// without replacement, independently at each step. Replace-one
	// adjacency: the noise multiplier is the noise standard deviation
	// over the replace-one sensitivity of the clipped sum, 2C
	// (dp_accounting's SampledWithoutReplacementDpEvent).
	Fixed
	// Cyclic: fixed batches. The dataset is split once into batches of B
	// (the last may be short) that every epoch takes in the same order,
	// so an example is in one batch of every ⌈N/B⌉ steps, and no
	// amplification by sampling is claimed: the run is one Gaussian
	// mechanism (CyclicAccountant), the accounting of correlated noise
	// (multi-epoch matrix factorization, Choquette-Choo et al. 2023).
	// Replace-one adjacency, as Fixed: the noise multiplier is relative
	// to 2C per participation.
	Cyclic
)

var samplingNames = names[Sampling]{"Sampling", "sampling", []string{Poisson: "poisson", Fixed: "fixed", Cyclic: "cyclic"}}

func (s Sampling) String() string { return samplingNames.name(s) }

// ParseSampling returns the Sampling named poisson or fixed.
func ParseSampling(name string) (Sampling, error) { return samplingNames.parse(name) }

// Sensitivity returns the L2 sensitivity of the clipped gradient sum
// under s's neighbouring relation when every per-example gradient is
// clipped to norm clip: clip for add/remove-one (Poisson), 2·clip for
// replace-one (Fixed, Cyclic). The noise standard deviation on the sum is the
// noise multiplier times this.
func (s Sampling) Sensitivity(clip float64) float64 {
	if s == Fixed || s == Cyclic {
		return 2 * clip
	}
	return clip
}

// CheckCorrelated refuses a sampling under which a correlated-noise
// optimizer cannot be accounted: every one but Cyclic, since no
// amplification by sampling is claimed for correlated noise.
func (s Sampling) CheckCorrelated() error {
	if s == Cyclic {
		return nil
	}
	return fmt.Errorf("sampling %s: a correlated-noise optimizer is accounted only under cyclic sampling (fixed batches, the same order every epoch), as one Gaussian mechanism with its factorization's sensitivity; no amplification by sampling is claimed for correlated noise", s)
}

// Series is how the RDP of Poisson sampling at fractional orders sums its
// series (integer orders have one exact formula).
type Series int

const (
	// ExactSeries sums the signed series of Mironov et al. 2019 and gives
	// A_α itself, as Opacus, TF Privacy and dp_accounting up to 2023 do.
	ExactSeries Series = iota
	// MagnitudeSeries sums the magnitudes of the terms, as current
	// dp_accounting does: an upper bound on A_α, up to a few percent
	// above it at small orders (see docs/privacy.md).
	MagnitudeSeries
)

var seriesNames = names[Series]{"Series", "series", []string{ExactSeries: "exact", MagnitudeSeries: "magnitudes"}}

func (s Series) String() string { return seriesNames.name(s) }

// ParseSeries returns the Series named exact or magnitudes.
func ParseSeries(name string) (Series, error) { return seriesNames.parse(name) }

// names are the names of a small enumeration's values, indexed by value:
// the String and Parse of Sampling, Series and Accounting, written once.
type names[T ~int] struct {
	typ, what string // the Go type, and the word errors use
	of        []string
}

// name returns v's name, or typ(v) for a value without one.
func (n names[T]) name(v T) string {
	if v < 0 || int(v) >= len(n.of) {
		return fmt.Sprintf("%s(%d)", n.typ, int(v))
	}
	return n.of[v]
}

// parse returns the value named name, or an error listing the names.
func (n names[T]) parse(name string) (T, error) {
	if i := slices.Index(n.of, name); i >= 0 {
		return T(i), nil
	}
	last := len(n.of) - 1
	return 0, fmt.Errorf("%s %q: want %s or %s", n.what, name, strings.Join(n.of[:last], ", "), n.of[last])
}

// MaxOrder is the largest Rényi order accepted; the cost of an order is
// proportional to it (and to its square up to 256 for Fixed sampling).
const MaxOrder = 10000

// Mechanism is one step of a subsampled Gaussian mechanism.
type Mechanism struct {
	Sigma      float64 // noise multiplier (see Sampling), finite and > 0
	SampleRate float64 // q = B/N, in [0, 1]
	Sampling   Sampling
	Series     Series // fractional orders of Poisson sampling
}

// RDP returns the Rényi DP of one step of m at each order: Mironov,
// Talwar and Zhang 2019 for Poisson sampling, the Theorem 27 bound of
// Wang, Balle and Kasiviswanathan 2019 for Fixed (see docs/privacy.md).
// RDP composes additively: T steps have T times these values.
func (m Mechanism) RDP(orders []float64) ([]float64, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if err := checkOrders(orders); err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	fixed := newFixedBound(m.SampleRate, m.Sigma)
	for i, a := range orders {
		if m.Sampling == Fixed {
			out[i] = clampRDP(fixed.rdp(a))
		} else {
			out[i] = clampRDP(rdpPoisson(m.SampleRate, m.Sigma, a, m.Series))
		}
	}
	return out, nil
}

// clampRDP maps a computed RDP to [0, +Inf]: Rényi divergences are
// nonnegative, and the fractional-order series carries log A_α to an
// absolute 1e-16 or so, so an RDP below that can come out slightly
// negative; a NaN, which no input should produce, becomes +Inf, which
// only overstates the privacy loss.
func clampRDP(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	return max(v, 0)
}

// check checks m's fields.
func (m Mechanism) check() error {
	switch {
	case !(m.Sigma > 0) || math.IsInf(m.Sigma, 0):
		return fmt.Errorf("sigma %v: want a finite value > 0", m.Sigma)
	case !(m.SampleRate >= 0 && m.SampleRate <= 1):
		return fmt.Errorf("sample rate %v: want a value in [0, 1]", m.SampleRate)
	case m.Sampling == Cyclic:
		return errors.New("cyclic sampling is accounted over the whole run (Plan), not step by step")
	case m.Sampling != Poisson && m.Sampling != Fixed:
		return fmt.Errorf("unknown sampling %v", m.Sampling)
	case m.Series != ExactSeries && m.Series != MagnitudeSeries:
		return fmt.Errorf("unknown series %v", m.Series)
	}
	return nil
}

// checkOrders checks that there are orders and each is in (1, MaxOrder].
func checkOrders(orders []float64) error {
	if len(orders) == 0 {
		return errors.New("no orders")
	}
	for _, a := range orders {
		if !(a > 1 && a <= MaxOrder) {
			return fmt.Errorf("order %v: want an order in (1, %d]", a, MaxOrder)
		}
	}
	return nil
}
