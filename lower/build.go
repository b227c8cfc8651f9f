package lower

import (
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
)

// Build lowers a checked file (dsl.Parse without errors) and optimizes it
// (ir.Optimize); the noise analysis is Lower's.
func Build(f *dsl.File, info *dsl.Info) (*ir.Func, *noise.Analysis, error) {
	fn, an, err := Lower(f, info)
	if err != nil {
		return nil, nil, err
	}
	return fn, an, ir.Optimize(fn)
}
