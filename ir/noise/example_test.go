package noise_test

import (
	"fmt"
	"strings"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/lower"
)

const innovation = `optimizer innovation

hyper omega = 0.9 in (0, 2)

state gt = 0
state r = 0

step {
	r = (1 - omega) * r + omega * (g - gt)
	gt = gt + r
	theta = theta - 0.01 * gt / (1 + attenuation(gt))
}
`

// ExampleSolve derives the attenuation of FiBeR's innovation filter from
// its noise model, with the conditions under which the filter is stable.
func ExampleSolve() {
	f, info, errs := dsl.Parse("innovation.dsl", []byte(innovation))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	fn, analysis, err := lower.Build(f, info)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, sn := range analysis.States {
		g, err := noise.Solve(sn.Model, analysis.Symbols)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: z = %v, attenuation = %s\n", sn.State, sn.Model.States, lower.FracString(g.A, g.Symbols))
		fmt.Printf("  stable where %s\n", strings.Join(lower.ConditionStrings(g.Conditions, g.Symbols), " and "))
		fmt.Printf("  at omega = 0.9: %.6f\n", g.At(fn, fn.DefaultHypers()).A)
	}
	_, err = fn.ApplySettings([]string{"omega=1.5"})
	fmt.Println(err)
	// Output:
	// gt: z = [gt r], attenuation = (2 - omega) / (4 - 3 * omega)
	//   stable where omega > 0 and 4 - 3 * omega > 0 and 2 - omega > 0
	//   at omega = 0.9: 0.846154
	// r: z = [gt r], attenuation = 2 * omega / (4 - 3 * omega)
	//   stable where omega > 0 and 4 - 3 * omega > 0 and 2 - omega > 0
	//   at omega = 0.9: 1.384615
	// the filter of state gt is unstable at omega=1.5: its spectral radius is 1.36603, not below 1 (it is stable where omega > 0 and 4 - 3 * omega > 0 and 2 - omega > 0)
}
