package ir

import (
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
	return nil
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
	return fmt.Errorf(fl.UnstableFormat(f.settingOf(fl.Model, h)), rho)
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
	if len(fl.Stability) > 0 {
		msg += " (it is stable where " + strings.Join(fl.Stability, " and ") + ")"
	}
	return msg
}

// settingOf prints the hypers block b reads, with their values in h.
func (f *Func) settingOf(b *Block, h []float64) string {
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
		return "every hyper setting"
	}
	return strings.Join(parts, ", ")
}

// DropBoundedFilters removes the Bounded filters, whose checks refuse a
// state that grows without bound: for a researcher who opts in to it
// (--allow-unstable, runtime Options.AllowUnstable). The filters that
// attenuation needs stay.
func (f *Func) DropBoundedFilters() {
	f.Filters = slices.DeleteFunc(f.Filters, func(fl *Filter) bool { return fl.Bounded })
}
