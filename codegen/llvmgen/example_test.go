package llvmgen_test

import (
	"fmt"

	"github.com/fibergen/fibergen/pipeline"
)

func ExampleGenerate() {
	src := "optimizer tiny\nhyper lr = 0.1 in (0, inf)\nstep {\n\ttheta = theta - lr * g\n}\n"
	u, errs, err := pipeline.Compile("tiny.dsl", []byte(src)) // pipeline.Compile calls llvmgen.Generate
	if len(errs) > 0 || err != nil {
		fmt.Println(errs, err)
		return
	}
	k := u.Module
	for _, b := range k.Buffers {
		fmt.Printf("buffer %s (read-only: %v)\n", b.Name, b.ReadOnly)
	}
	fmt.Printf("scalars %q\n", k.Scalars)
	fmt.Println("entry points", k.StepKernel(), k.HostFunc())
	// Output:
	// buffer theta (read-only: false)
	// buffer g (read-only: true)
	// scalars ["lr" "sqrt(sigma_w2)"]
	// entry points tiny_step tiny_cpu
}
