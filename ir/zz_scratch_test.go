package ir

import (
	"fmt"
	"testing"

	"github.com/fibergen/fibergen/dsl"
)

func TestZZScratch(t *testing.T) {
	type c struct {
		pass string
		src  string
	}
	for _, cc := range []c{
		{"fold", "step {\n theta = 2 * 3 + g\n}"},
		{"fold", "hyper lr = 0.1\nstep {\n theta = theta - f32x * g\n}"},
		{"fold", "step {\n theta = 0.1 * g\n}"},
		{"fold", "state m = 0\nstep {\n m = 0.1\n theta = m * 0.1 * g\n}"},
		{"fold", "step {\n theta = (1e300*1e300) * g\n}"},
		{"fold", "step {\n theta = (1e300*1e300 - 1e300*1e300) * g + 1e39 * theta\n}"},
		{"fold", "step {\n theta = sqrt(4) * g - abs(-2) * min(1, -0) + max(0, -0)\n}"},
		{"cse", "hyper lr = 0.1\nstep {\n theta = lr * theta + lr * g\n}"},
		{"cse", "state m = 0\nstep {\n m = g * m\n theta = theta + m * g + g\n}"},
		{"cse", "state m = 0\nstep {\n a = m * g\n b = g * m\n m = max(a, b) + max(b, a)\n theta = a - b + m\n}"},
		{"cse", "state m = 0\nstep {\n a = m * g\n m = g * m\n theta = a + g * m\n}"},
		{"dce", "hyper lr = 0.1\nstep {\n a = lr * 2\n b = a + t\n theta = g\n}"},
		{"hoist", "hyper lr = 0.1\nhyper beta = 0.9\nstep {\n x = g * lr\n theta = x - beta ** (t + 1) * theta\n}"},
	} {
		src := "optimizer p\n" + cc.src + "\n"
		f, info, errs := dsl.Parse("x.dsl", []byte(src))
		if len(errs) > 0 {
			fmt.Println("errs:", errs)
			continue
		}
		fn, err := Lower(f, info)
		if err != nil {
			fmt.Println("lower err:", err)
			continue
		}
		fmt.Println("=== ", cc.pass, cc.src)
		fmt.Print(fn.Step)
		for _, p := range Pipeline {
			if p.Name == cc.pass {
				p.Run(fn.Step)
			}
		}
		fmt.Print(fn.Step, Verify(fn), "\n")
	}
}
