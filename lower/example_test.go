package lower_test

import (
	"fmt"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/lower"
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

// ExampleBuild lowers a checked file and optimizes it: the IR every code
// generator takes.
func ExampleBuild() {
	f, info, errs := dsl.Parse("momentum.dsl", []byte(momentum))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	fn, _, err := lower.Build(f, info)
	if err != nil {
		fmt.Println(err)
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
	// filter_v:
	//   u %0:f64 = hyper mu
	//   u %1:f64 = const 1
	//   u store m_0_0, %0
	//   u store b_0, %1
}
