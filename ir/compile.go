package ir

import "github.com/fibergen/fibergen/dsl"

// Compile parses, checks, lowers and optimizes one .dsl source. A non-nil
// ErrorList holds the positioned diagnostics; err reports a failure after
// checking, which is a bug in fibergen rather than in the source.
func Compile(filename string, src []byte) (fn *Func, errs dsl.ErrorList, err error) {
	f, info, errs := dsl.Parse(filename, src)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	fn, err = Build(f, info)
	if el, ok := err.(dsl.ErrorList); ok {
		return nil, el, nil
	}
	return fn, nil, err
}

// Build lowers a checked file (dsl.Parse without errors) and optimizes it.
// Errors of the source that only lowering finds (an attenuation without a
// linear, stable filter) come as a dsl.ErrorList.
func Build(f *dsl.File, info *dsl.Info) (*Func, error) {
	fn, err := Lower(f, info)
	if err != nil {
		return nil, err
	}
	return fn, Optimize(fn)
}
