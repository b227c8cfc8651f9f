package pipeline_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/pipeline"
)

func TestCompileShipped(t *testing.T) {
	src, err := os.ReadFile("../optimizers/fiber.dsl")
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.Compile("optimizers/fiber.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatal(errs, err)
	}
	want, err := os.ReadFile("../generated/fiber/fiber.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(u.GoCode, want) {
		t.Error("generated code differs from generated/fiber/fiber.go (run make generate)")
	}
	if u.Func.Name != "fiber" || !bytes.HasPrefix(u.Canonical, []byte("optimizer fiber\n")) {
		t.Errorf("unit: name %q, canonical %.20q", u.Func.Name, u.Canonical)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"diagnostic", "optimizer x\nstep {\n theta = y\n}\n", "undefined: y"},
		{"go name clash", "optimizer x\nhyper eps_v = 1\nhyper epsV = 1\nstep {\n theta = eps_v * epsV * g\n}\n", "EpsV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, errs, err := pipeline.Compile("x.dsl", []byte(tc.src))
			msg := errs.Error()
			if err != nil {
				msg = err.Error()
			}
			if u != nil || !strings.Contains(msg, tc.want) {
				t.Errorf("unit %v, errs %v, err %v; want a failure mentioning %q", u, errs, err, tc.want)
			}
		})
	}
}
