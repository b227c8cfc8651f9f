package pipeline

import (
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/lang"
)

// refuseLines reports every state per row or per column and every row or
// column reduction of f: `fibergen check` and `explain` take them, and the
// interpreter computes them, but no target generates them yet (docs/dsl.md,
// "Rows and columns"; decision 134).
func refuseLines(f *dsl.File) dsl.ErrorList {
	var errs dsl.ErrorList
	const why = "fibergen checks and explains it, but no target compiles states per row or per column yet (docs/dsl.md, \"Rows and columns\")"
	for _, s := range f.States {
		if s.Axis != nil {
			errs.Addf(s.Axis.NamePos, "state %s is %s: %s", s.Name.Name, lang.AxisWords[s.Axis.Name].Per(), why)
		}
	}
	for _, a := range f.Step.Body {
		dsl.Inspect(a.RHS, func(x dsl.Expr) bool {
			if call, ok := x.(*dsl.CallExpr); ok {
				if _, line := lang.LineReductions[call.Fun.Name]; line {
					errs.Addf(call.Fun.NamePos, "%s: fibergen checks and explains it, but no target compiles row or column reductions yet (docs/dsl.md, \"Rows and columns\")", call.Fun.Name)
				}
			}
			return true
		})
	}
	errs.Normalize()
	return errs
}
