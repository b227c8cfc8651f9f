package ir_test

import (
	"fmt"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lower"
)

func ExampleHostScalars() {
	src := `optimizer adam_bias
hyper lr = 1e-3
hyper beta1 = 0.9
state m = 0
step {
	m = beta1 * m + (1 - beta1) * g
	theta = theta - lr * m / (1 - beta1 ** (t + 1))
}
`
	f, info, errs := dsl.Parse("adam_bias.dsl", []byte(src))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	fn, _, err := lower.Build(f, info)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range ir.HostScalars(fn.Step) {
		perStep := "per run"
		if ir.DependsOnStep(v) {
			perStep = "per step"
		}
		fmt.Printf("%-22s %s\n", ir.ExprString(v), perStep)
	}
	// Output:
	// beta1                  per run
	// 1 - beta1              per run
	// lr                     per run
	// 1 - beta1 ** (t + 1)   per step
}
