package interp

import (
	"fmt"
	"strings"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir"
)

// varyingCheck is a time-varying filter (ir.Func.Varying) prepared for
// its check at every step.
type varyingCheck struct {
	fl    *ir.Filter
	model *code
}

func compileVarying(fn *ir.Func) ([]varyingCheck, error) {
	var out []varyingCheck
	for _, fl := range fn.Varying {
		c, err := compile(fn, fl.Model)
		if err != nil {
			return nil, err
		}
		out = append(out, varyingCheck{fl, c})
	}
	return out, nil
}

// UnstableStepError reports a time-varying filter that grows at a step:
// the spectral radius of its transition at that step, from the
// coefficients the hypers, t and the scalars give it there, is above 1.
type UnstableStepError struct {
	State   string
	Step    int
	Setting string // the hypers and scalars its model reads, name=value
	Radius  float64
	Region  []string // where it is stable (ir.Filter.Stability), if derived
}

func (e *UnstableStepError) Error() string {
	return fmt.Sprintf(ir.UnstableStepFormat(e.State, e.Region), e.Step, e.Setting, e.Radius)
}

// CheckVarying reports, as an *UnstableStepError, a time-varying filter
// whose transition at step t (hypers h, noise variance sigmaW2, the
// scalars at t) has a spectral radius above 1.
func (p *Program) CheckVarying(h []float64, t int, sigmaW2 float64) error {
	if len(p.varying) == 0 {
		return nil
	}
	scal := p.Scalars(h, t, sigmaW2)
	for _, vc := range p.varying {
		r := vc.model.hostWith(h, t, sigmaW2, scal, nil)
		var entries []float64
		for _, in := range vc.model.kernelPart { // the stores, in EntryNames order
			entries = append(entries, r.f64[in.a])
		}
		k := len(vc.fl.States)
		if rho := gain.FeedingRadius(entries[:k*k], k, vc.fl.Target); !vc.fl.Stable(rho) {
			return &UnstableStepError{State: vc.fl.State, Step: t, Setting: p.varyingSetting(vc.fl, h, scal),
				Radius: rho, Region: vc.fl.Stability}
		}
	}
	return nil
}

// varyingSetting prints the hypers and the scalars fl's model reads with
// their values.
func (p *Program) varyingSetting(fl *ir.Filter, h []float64, scal []float64) string {
	var parts []string
	if s := p.Func.SettingOf(fl.Model, h); s != ir.EverySetting {
		parts = append(parts, s)
	}
	for i, name := range p.Func.Scalars {
		if fl.Model.ReadsScalar(name) {
			parts = append(parts, fmt.Sprintf("%s=%v", name, scal[i]))
		}
	}
	return strings.Join(parts, ", ")
}
