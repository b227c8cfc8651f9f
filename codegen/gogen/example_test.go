package gogen_test

import (
	"fmt"
	"strings"

	"github.com/fibergen/fibergen/codegen/gogen"
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/lower"
)

func ExampleGenerate() {
	src := "optimizer sgd\nhyper lr = 0.1 in (0, inf)\nstep {\n\ttheta = theta - lr * g\n}\n"
	f, info, _ := dsl.Parse("sgd.dsl", []byte(src))
	fn, _, _ := lower.Build(f, info)
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
