package lower

import (
	"errors"
	"math"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/ir/noise"
)

// Build lowers a checked file (dsl.Parse without errors) and optimizes it
// (ir.Optimize); the noise analysis is Lower's. An initial value or a host
// scalar that is not finite at the defaults is an error in the source.
func Build(f *dsl.File, info *dsl.Info) (*ir.Func, *noise.Analysis, error) {
	fn, an, err := Lower(f, info)
	if err == nil {
		err = ir.Optimize(fn)
	}
	if err == nil {
		err = checkDefaults(f, fn)
	}
	if err != nil {
		return nil, nil, err
	}
	return fn, an, nil
}

// checkDefaults reports, at the state's initial value or at the step, a
// value that is NaN or ±Inf at the default hypers (interp.CheckValues).
func checkDefaults(f *dsl.File, fn *ir.Func) error {
	if err := checkKernelConstants(f, fn); err != nil {
		return err
	}
	p, err := interp.New(fn)
	if err != nil {
		return err
	}
	err = p.CheckValues(fn.DefaultHypers())
	if err == nil {
		return checkVaryingDefaults(f, p)
	}
	var nf *interp.NonFiniteValueError
	if !errors.As(err, &nf) {
		return err
	}
	pos := f.Step.Keyword
	for _, s := range f.States {
		if s.Name.Name == nf.State {
			pos = s.Init.Pos()
		}
	}
	var errs dsl.ErrorList
	errs.Addf(pos, "at the defaults: %v", err)
	return errs
}

// checkKernelConstants reports a constant of the optimized step that is
// finite in float64, as the checker requires, but not in float32, where it
// meets a per-coordinate value (1e39 * g): the kernel would compute with
// +Inf.
func checkKernelConstants(f *dsl.File, fn *ir.Func) error {
	for _, v := range fn.Step.Values {
		if v.Op == ir.OpConst && v.Type == ir.F32 && (math.IsInf(v.Const, 0) || math.IsNaN(v.Const)) {
			var errs dsl.ErrorList
			errs.Addf(f.Step.Keyword, "a constant of the step is %v in float32, where it meets a per-coordinate value: "+
				"constants must be finite in float32 there (at most 3.4028235e+38)", v.Const)
			return errs
		}
	}
	return nil
}

// VaryingCheckSteps is how many steps of a time-varying filter's schedule
// checkVaryingDefaults follows at the defaults; the runtime checks every
// step it runs.
const VaryingCheckSteps = 10000

// checkVaryingDefaults reports, at the state's declaration, a time-varying
// filter that grows at one of the first VaryingCheckSteps steps at the
// default hypers and sigma_w2 = 0 (interp.Program.CheckVarying).
func checkVaryingDefaults(f *dsl.File, p *interp.Program) error {
	h := p.Func.DefaultHypers()
	for t := range VaryingCheckSteps {
		var us *interp.UnstableStepError
		if err := p.CheckVarying(h, t, 0); errors.As(err, &us) {
			var errs dsl.ErrorList
			errs.Addf(stateDecl(f, us.State), "at the defaults: %v", err)
			return errs
		} else if err != nil {
			return err
		}
	}
	return nil
}
