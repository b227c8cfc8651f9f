package interp_test

import (
	"fmt"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/lower"
)

func ExampleNew() {
	src := `optimizer momentum
hyper lr = 0.5
hyper mu = 0.9
state v = 0
step {
	v = mu * v + g
	theta = theta - lr * v
}
`
	f, info, errs := dsl.Parse("momentum.dsl", []byte(src))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	fn, _, err := lower.Build(f, info)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := interp.New(fn)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := fn.DefaultHypers()
	theta := []float32{1, 2}
	states := [][]float32{make([]float32, 2)}
	p.Init(h, states)
	for t, g := range [][]float32{{1, -1}, {1, -1}} {
		s := p.HostScalars(h, t, 0) // once per step
		if err := p.Step(s, nil, theta, g, states); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("step", t, "theta", theta, "v", states[0])
	}
	// Output:
	// step 0 theta [0.5 2.5] v [1 -1]
	// step 1 theta [-0.45 3.45] v [1.9 -1.9]
}
