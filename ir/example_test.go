package ir_test

import (
	"fmt"
	"strings"

	"github.com/fibergen/fibergen/dsl"
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

func ExampleCompile() {
	fn, errs, err := ir.Compile("momentum.dsl", []byte(momentum))
	if len(errs) > 0 || err != nil {
		fmt.Println(errs, err)
		return
	}
	fmt.Print(fn)
	// Output:
	// optimizer momentum
	// hyper lr = 0.01 in (0, inf)
	// hyper mu = 0.9 in [0, 1)
	// states v
	// init:
	//   u %0:f32 = const 0
	//   u store v, %0
	// observe:
	// step:
	//   u %0:f64 = hyper mu
	//   u %1:f32 = f32 %0
	//   u %2:f64 = hyper lr
	//   u %3:f32 = f32 %2
	//   v %4:f32 = load v
	//   v %5:f32 = mul %1, %4
	//   v %6:f32 = load g
	//   v %7:f32 = add %5, %6
	//   v store v, %7
	//   v %9:f32 = load theta
	//   v %10:f32 = mul %3, %7
	//   v %11:f32 = sub %9, %10
	//   v store theta, %11
}

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
	fn, errs, err := ir.Compile("adam_bias.dsl", []byte(src))
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
	fn, errs, err := ir.Compile("innovation.dsl", []byte(innovation))
	if len(errs) > 0 || err != nil {
		fmt.Println(errs, err)
		return
	}
	for _, sn := range fn.Noise.States {
		g, err := ir.Solve(sn.Model, fn.Noise.Symbols)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: z = %v, attenuation = %s\n", sn.State, sn.Model.States, dsl.ExprString(ir.ClosedForm(g)))
		fmt.Printf("  stable where %s\n", strings.Join(ir.ConditionStrings(g.Conditions, fn.Noise.Symbols), " and "))
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
