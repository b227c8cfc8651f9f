package lower

import (
	"errors"

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
	p, err := interp.New(fn)
	if err != nil {
		return err
	}
	err = p.CheckValues(fn.DefaultHypers())
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
