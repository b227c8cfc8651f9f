package pipeline

import (
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/manifest"
)

// Rows and columns (docs/dsl.md, "Rows and columns"; decision 136): no
// target compiles states per row or per column, or row and column sums,
// yet. Compile gives such a unit a manifest alone, which the runtime runs
// on Backend go (the interpreter, the reference); CompileKernels, which
// fibergen build runs, refuses it at each state and reduction.

// NoKernels reports whether u has no kernels: an optimizer with line
// states or row and column sums, whose manifest lists none.
func (u *Unit) NoKernels() bool { return u.Func.HasLines() }

// manifestAlone gives u a manifest without kernels.
func (u *Unit) manifestAlone() error {
	m, err := manifest.New(u.Func, u.Path, u.Src, manifest.Kernels{})
	if err != nil {
		return err
	}
	m.Kernels.LL, m.Kernels.PTX, m.Kernels.SharedObject = "", "", "" // none written
	u.Manifest, err = m.Encode()
	return err
}

// CompileKernels is CompileFor for fibergen build, which writes kernels:
// it refuses a unit without any (NoKernels) at each of its states per row
// or per column and each row or column reduction.
func CompileKernels(path string, src []byte, params ir.Storage) (*Unit, dsl.ErrorList, error) {
	u, errs, err := CompileFor(path, src, params)
	if u != nil && u.NoKernels() {
		return nil, refuseLines(u.File), nil
	}
	return u, errs, err
}

// refuseLines reports every state per row or per column and every row or
// column reduction of f.
func refuseLines(f *dsl.File) dsl.ErrorList {
	var errs dsl.ErrorList
	const why = "no target compiles states per row or per column yet: the reference runs it (fibergen run --backend go --tensors RxC; the PyTorch binding on the CPU; docs/dsl.md, \"Rows and columns\")"
	for _, s := range f.States {
		if s.Axis != nil {
			errs.Addf(s.Axis.NamePos, "state %s is %s: %s", s.Name.Name, lang.AxisWords[s.Axis.Name].Per(), why)
		}
	}
	for _, a := range f.Step.Body {
		dsl.Inspect(a.RHS, func(x dsl.Expr) bool {
			if call, ok := x.(*dsl.CallExpr); ok {
				if _, line := lang.LineReductions[call.Fun.Name]; line {
					errs.Addf(call.Fun.NamePos, "%s: no target compiles row or column reductions yet: the reference runs them (fibergen run --backend go)", call.Fun.Name)
				}
			}
			return true
		})
	}
	errs.Normalize()
	return errs
}
