package gogen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/codegen/gogen"
	"github.com/fibergen/fibergen/internal/golden"
	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/pipeline"
)

// generate compiles a .dsl file the way fibergen build does.
func generate(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.Compile(path, src)
	if len(errs) > 0 {
		t.Fatalf("compile %s: %v", path, errs)
	}
	if err != nil {
		return nil, err
	}
	return u.GoCode, nil
}

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.dsl")
	if len(files) == 0 {
		t.Fatal("no testdata/*.dsl")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got, err := generate(t, path)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(path, ".dsl")+".go.golden", got)
		})
	}
}

func TestHeaderAndNoFusion(t *testing.T) {
	got, err := generate(t, "testdata/ops.dsl")
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	if !strings.HasPrefix(text, "// "+gogen.Header+"\n") {
		t.Errorf("generated file does not start with the header: %q", text[:60])
	}
	for _, line := range strings.Split(text, "\n") {
		// Every float32 product or sum must be rounded by a conversion.
		if strings.Contains(line, " := v") && strings.ContainsAny(line, "*+") && !strings.Contains(line, "float32(") {
			t.Errorf("unrounded float32 arithmetic: %s", strings.TrimSpace(line))
		}
	}
	for _, want := range []string{"theta, g, range_, v1_ []float32", "func maxOf", "func minOf", "func abs32"} {
		if !strings.Contains(text, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
}

func TestNameClash(t *testing.T) {
	src := []byte("optimizer clash\nhyper eps_v = 1\nhyper epsV = 2\nstep {\n theta = theta - eps_v * epsV * g\n}\n")
	fn, errs, err := irtest.Compile("clash.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatal(errs, err)
	}
	_, err = gogen.Generate(fn.Func, gogen.Options{Source: "clash.dsl"})
	if err == nil || !strings.Contains(err.Error(), "EpsV") {
		t.Fatalf("want a clash error naming EpsV, got %v", err)
	}
}

func TestRejectsInvalidIR(t *testing.T) {
	c, _, err := irtest.Compile("sgd.dsl", []byte("optimizer sgd\nhyper lr = 0.1\nstep {\n theta = theta - lr * g\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fn := c.Func
	fn.Step.Values = fn.Step.Values[1:] // drop a definition that others use
	if _, err := gogen.Generate(fn, gogen.Options{Source: "sgd.dsl"}); err == nil || !strings.Contains(err.Error(), "not defined") {
		t.Fatalf("want an error for invalid IR, got %v", err)
	}
}
