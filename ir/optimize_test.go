package ir_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/golden"
	"github.com/fibergen/fibergen/internal/irtest"
	. "github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lower"

	"github.com/fibergen/fibergen/dsl"
)

// optimizerFiles returns the shipped optimizers, which must exist.
func optimizerFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../optimizers/*.dsl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no ../optimizers/*.dsl (err %v)", err)
	}
	return files
}

func baseName(path string) string { return strings.TrimSuffix(filepath.Base(path), ".dsl") }

func TestOptimizeGolden(t *testing.T) {
	for _, path := range optimizerFiles(t) {
		t.Run(baseName(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fn, errs, err := irtest.Compile(path, src)
			if len(errs) > 0 || err != nil {
				t.Fatalf("Compile: errs %v, err %v", errs, err)
			}
			dump := fn.String()
			golden.Check(t, filepath.Join("testdata", baseName(path)+".ir"), []byte(dump))
			if err := Optimize(fn.Func); err != nil {
				t.Fatalf("second Optimize: %v", err)
			}
			if again := fn.String(); again != dump {
				t.Errorf("optimizing again changed the dump; first difference:\n%s", golden.FirstDiff(again, dump))
			}
		})
	}
}

// source is a file's path and contents.
type source struct {
	path string
	src  []byte
}

// checkedSources returns, in order, the files that check clean.
func checkedSources(t *testing.T, files []string) []source {
	t.Helper()
	var out []source
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, errs := dsl.Parse(path, src); len(errs) == 0 {
			out = append(out, source{path, src})
		}
	}
	return out
}

// lowerFile lowers a source that checks clean.
func lowerFile(t *testing.T, path string, src []byte) *Func {
	t.Helper()
	f, info, errs := dsl.Parse(path, src)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", path, errs)
	}
	fn, _, err := lower.Lower(f, info)
	if err != nil {
		t.Fatalf("Lower: %v", err)
	}
	return fn
}

// verifyEachPass checks Verify after every pass of Pipeline in order, and
// after every pass run alone on the lowered function.
func verifyEachPass(t *testing.T, path string, src []byte) {
	fn := lowerFile(t, path, src)
	for _, p := range Pipeline {
		for _, b := range fn.Blocks() {
			p.Run(b)
		}
		if err := Verify(fn); err != nil {
			t.Errorf("in the pipeline, after %s: %v", p.Name, err)
		}
	}
	for _, p := range Pipeline {
		fn := lowerFile(t, path, src)
		for _, b := range fn.Blocks() {
			p.Run(b)
		}
		if err := Verify(fn); err != nil {
			t.Errorf("%s alone: %v", p.Name, err)
		}
	}
}

func TestVerifyAfterEachPass(t *testing.T) {
	t.Run("optimizers", func(t *testing.T) {
		srcs := checkedSources(t, optimizerFiles(t))
		if len(srcs) != len(optimizerFiles(t)) {
			t.Fatalf("only %d of the shipped optimizers check clean", len(srcs))
		}
		for _, s := range srcs {
			t.Run(baseName(s.path), func(t *testing.T) { verifyEachPass(t, s.path, s.src) })
		}
	})
	t.Run("dsl-testdata", func(t *testing.T) {
		files, _ := filepath.Glob("../dsl/testdata/parse/*.dsl")
		if len(files) == 0 {
			t.Skip("no ../dsl/testdata/parse/*.dsl yet")
		}
		srcs := checkedSources(t, files)
		t.Logf("%d of %d files check clean", len(srcs), len(files))
		for _, s := range srcs {
			t.Run(baseName(s.path), func(t *testing.T) { verifyEachPass(t, s.path, s.src) })
		}
	})
}

func TestOptimizeNamesTheBrokenPass(t *testing.T) {
	saved := Pipeline
	defer func() { Pipeline = saved }()
	dropStores := func(b *Block) {
		b.Values = slices.DeleteFunc(b.Values, func(v *Value) bool { return v.Op == OpStore })
	}
	Pipeline = append(append([]Pass{}, saved...), Pass{"drop-stores", dropStores})
	fn := irtest.LowerStep(t, "", "theta = g")
	err := Optimize(fn)
	if err == nil || !strings.Contains(err.Error(), "after pass drop-stores") || !strings.Contains(err.Error(), "no store of theta") {
		t.Fatalf("Optimize with a pass that drops stores: err = %v", err)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("Optimize's error does not wrap Verify's: %v", err)
	}
}
