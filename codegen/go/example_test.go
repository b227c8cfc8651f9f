package gogen_test

import (
	"fmt"
	"strings"

	gogen "github.com/fibergen/fibergen/codegen/go"
	"github.com/fibergen/fibergen/ir"
)

func ExampleGenerate() {
	src := "optimizer sgd\nhyper lr = 0.1 in (0, inf)\nstep {\n\ttheta = theta - lr * g\n}\n"
	fn, _, _ := ir.Compile("sgd.dsl", []byte(src))
	code, err := gogen.Generate(fn, gogen.Options{Source: "sgd.dsl", DSL: []byte(src)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(string(code), "\n") {
		if strings.Contains(line, "theta[i] =") || strings.HasPrefix(line, "func Step(") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// func Step(s Scalars, nz Noise, theta, g []float32) {
	// theta[i] = v5
}
