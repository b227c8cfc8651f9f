package ir

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/gain"
)

// FilterValues evaluates the filter's model at hypers h: M (row major) and b.
func (f *Func) FilterValues(fl *Filter, h []float64) (m, b []float64) {
	var entries []float64
	for _, s := range fl.Model.Stores() {
		entries = append(entries, f.EvalUniform(s.Args[0], h, math.NaN()))
	}
	k := len(fl.States)
	return entries[:k*k], entries[k*k:]
}

// CheckStability reports the first filter that is not stable at hypers h,
// with its spectral radius and the hypers it depends on.
func (f *Func) CheckStability(h []float64) error {
	for _, fl := range f.Filters {
		if err := f.CheckFilter(fl, h); err != nil {
			return err
		}
	}
	if f.Noise != nil {
		return f.CheckNoise(h)
	}
	return nil
}

// NoiseModel evaluates the noise filter at hypers h: the buffers'
// transition M (row major) and input b, and the output's h and d
// (Filter.Noise).
func (f *Func) NoiseModel(h []float64) (m, b, out []float64, d float64) {
	e, k := f.noiseEntries(h), len(f.Noise.States)
	return e[:k*k], e[k*k : k*k+k], e[k*k+k : k*k+2*k], e[k*k+2*k]
}

// noiseEntries evaluates the noise filter's model at hypers h, in the
// order of its EntryNames, each rounded to float32 as the kernels take it:
// the coefficients, the strategy and the sensitivity are those of the
// filter that runs.
func (f *Func) noiseEntries(h []float64) []float64 {
	at := map[string]float64{}
	for _, s := range f.Noise.Model.Stores() {
		at[s.Name] = float64(float32(f.EvalUniform(s.Args[0], h, math.NaN())))
	}
	var e []float64
	for _, name := range f.Noise.EntryNames() { // Verify: each stored once
		e = append(e, at[name])
	}
	return e
}

// SameNoise reports whether hypers a and b give the noise block the same
// filter, bit for bit (true without a noise block): a run's filter must
// not change, nor differ between tensors, as its sensitivity is that of
// one filter over the whole run.
func (f *Func) SameNoise(a, b []float64) bool {
	return f.Noise == nil || slices.EqualFunc(f.noiseEntries(a), f.noiseEntries(b), func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y)
	})
}

// NoiseCoefficients returns the first n Toeplitz coefficients of the noise
// filter at hypers h: w_t = Σ_s c_{t−s} z_s with c_0 = d and c_k = h·M^(k−1)·b.
func (f *Func) NoiseCoefficients(h []float64, n int) []float64 {
	m, b, out, d := f.NoiseModel(h)
	return impulse(m, b, out, d, n)
}

// StrategyCoefficients returns the first n Toeplitz coefficients of the
// inverse of the noise filter at hypers h, the strategy C of its
// factorization (docs/correlated-noise.md): the impulse response of the
// inverse system (strategyTransition), in O(n) where the power-series
// inverse of NoiseCoefficients takes O(n²). CheckNoise refuses a filter
// without one.
func (f *Func) StrategyCoefficients(h []float64, n int) []float64 {
	m, b, out, d := f.NoiseModel(h)
	bi, oi := slices.Clone(b), make([]float64, len(out))
	for i := range b {
		bi[i], oi[i] = b[i]/d, -out[i]/d
	}
	return impulse(strategyTransition(m, b, out, d), bi, oi, 1/d, n)
}

// impulse returns the first n coefficients of the impulse response of
// the system s' = M s + b x, y = out·s + d x: d, then out·M^(k−1)·b.
func impulse(m, b, out []float64, d float64, n int) []float64 {
	c := make([]float64, n)
	x := slices.Clone(b) // M^(j-1)·b
	for j := range c {
		if j == 0 {
			c[0] = d
			continue
		}
		for i := range b {
			c[j] += float64(out[i] * x[i]) // rounded: no fused multiply-add, the same bits on every GOARCH
		}
		x = matVec(m, x, len(b))
	}
	return c
}

func matVec(m, x []float64, k int) []float64 {
	y := make([]float64, k)
	for i := range k {
		for j := range k {
			y[i] += float64(m[i*k+j] * x[j])
		}
	}
	return y
}

// CheckNoise reports a noise filter that does not decay at hypers h (the
// spectral radius of its buffers' transition is not below 1), or whose w
// does not read z (d = 0: no fresh noise enters the step, and the
// filter has no inverse, so no sensitivity).
func (f *Func) CheckNoise(h []float64) error {
	m, b, out, d := f.NoiseModel(h)
	setting := f.SettingOf(f.Noise.Model, h)
	if rho := gain.SpectralRadius(m, len(f.Noise.States)); !(rho < 1) {
		msg := fmt.Sprintf("the noise filter is unstable at %s: the spectral radius of its buffers is %.6g, not below 1, so the noise it correlates never decays", setting, rho)
		msg += StableWhere(f.Noise.Stability)
		return errors.New(msg)
	}
	if d == 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return fmt.Errorf("the noise filter at %s gives w a coefficient of %v on z: w must read the fresh draw z with a finite, non-zero coefficient, or no fresh noise enters the step", setting, d)
	}
	if rho := gain.SpectralRadius(strategyTransition(m, b, out, d), len(b)); !(rho < 1) {
		return fmt.Errorf("the noise filter's inverse, the strategy matrix, is unstable at %s: the spectral radius of M - b·h/d is %.6g, not below 1, so its coefficients and the sensitivity grow without bound (fibergen mechanism designs filters whose inverse decays)", setting, rho)
	}
	return nil
}

// strategyTransition is the transition of the inverse of the noise filter
// (m, b, out = h, d), the strategy C: from w_t = h·s_t + d z_t,
// z_t = (w_t − h·s_t)/d and s_{t+1} = (M − b·hᵀ/d) s_t + (b/d) w_t.
func strategyTransition(m, b, out []float64, d float64) []float64 {
	k := len(b)
	t := slices.Clone(m)
	for i := range k {
		for j := range k {
			t[i*k+j] -= b[i] * out[j] / d
		}
	}
	return t
}

// CheckFilter reports that filter fl is not stable at hypers h: the
// spectral radius of its states that feed fl.State (gain.FeedingRadius) is
// not below 1.
func (f *Func) CheckFilter(fl *Filter, h []float64) error {
	m, _ := f.FilterValues(fl, h)
	rho := gain.FeedingRadius(m, len(fl.States), fl.Target)
	if fl.Stable(rho) {
		return nil
	}
	return fmt.Errorf(fl.UnstableFormat(f.SettingOf(fl.Model, h)), rho)
}

// MaxBoundedRadius is the largest spectral radius of a Bounded filter: 1,
// up to the rounding of its computation.
const MaxBoundedRadius = 1 + 1e-9

// Stable reports whether spectral radius rho is acceptable for fl: below 1
// for a filter that attenuation names (its noise must reach a steady
// state), at most 1 for a Bounded one (it must not grow without bound).
func (fl *Filter) Stable(rho float64) bool {
	if fl.Bounded {
		return rho <= MaxBoundedRadius
	}
	return rho < 1
}

// UnstableFormat is the message of fl unstable at setting, with a %.6g
// verb for the spectral radius: CheckFilter's and the generated packages'.
func (fl *Filter) UnstableFormat(setting string) string {
	msg := fmt.Sprintf("the filter of state %s is unstable at %s: its spectral radius is %%.6g, not below 1", fl.State, setting)
	if fl.Bounded {
		msg = fmt.Sprintf("the filter of state %s is unstable at %s: its spectral radius is %%.6g, above 1, so %s grows without bound", fl.State, setting, fl.State)
	}
	msg += StableWhere(fl.Stability)
	return msg
}

// HasFiniteGain reports whether fl's model has the finite-time gain of
// its state, attenuation_t: not for a filter that starts otherwise at
// step 0 (Start), nor for the limit of a time-varying one (Limit), whose
// attenuation_t is the covariance the host follows.
func (fl *Filter) HasFiniteGain() bool { return fl.Start == "" && !fl.Limit }

// Over reports whether fl is a filter over the set states, in any order.
func (fl *Filter) Over(states []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(fl.States)), slices.Sorted(slices.Values(states)))
}

// StableWhere is the end of an unstable filter's message that gives its
// stability region, conds (Filter.Stability), or "" where none was derived.
func StableWhere(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " (it is stable where " + strings.Join(conds, " and ") + ")"
}

// UnstableStepFormat is the message of the time-varying filter of state
// unstable at a step, with verbs for the step (%d), the setting (%s) and
// the spectral radius (%.6g), and where it is stable (region, as
// Filter.Stability): interp's UnstableStepError's and the generated
// packages' Host.checkVarying's.
func UnstableStepFormat(state string, region []string) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	return "the filter of state " + esc(state) + " is unstable at step %d (%s): its spectral radius there is %.6g, above 1, so " +
		esc(state) + " grows" + esc(StableWhere(region))
}

// SettingOf prints the hypers block b reads, with their values in h.
func (f *Func) SettingOf(b *Block, h []float64) string {
	var parts []string
	for _, hy := range f.Hypers {
		for _, v := range b.Values {
			if v.Op == OpHyper && v.Name == hy.Name {
				parts = append(parts, fmt.Sprintf("%s=%v", hy.Name, h[f.HyperIndex(hy.Name)]))
				break
			}
		}
	}
	if len(parts) == 0 {
		return EverySetting
	}
	return strings.Join(parts, ", ")
}

// EverySetting is SettingOf's setting of a block that reads no hypers.
const EverySetting = "every hyper setting"

// DropBoundedFilters removes the Bounded filters, whose checks refuse a
// state that grows without bound: for a researcher who opts in to it
// (--allow-unstable, runtime Options.AllowUnstable). The filters that
// attenuation needs stay.
func (f *Func) DropBoundedFilters() {
	f.Filters = slices.DeleteFunc(f.Filters, func(fl *Filter) bool { return fl.Bounded })
	f.Varying = nil
}
