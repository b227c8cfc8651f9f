package ir_test

import (
	"fmt"

	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
)

const momentum = `optimizer momentum

hyper lr = 0.01 in (0, inf)
hyper mu = 0.9 in [0, 1)

state v = 0

step {
	v = mu * v + g
	theta = theta - lr * v
}
`

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
	fn, errs, err := irtest.Compile("adam_bias.dsl", []byte(src))
	if len(errs) > 0 || err != nil {
		fmt.Println(errs, err)
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
