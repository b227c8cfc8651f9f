package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/pipeline"
)

// FuzzCompile runs every phase on arbitrary sources: a source without
// diagnostics must give a Go package and a kernel module with both entry
// points, and nothing may panic.
func FuzzCompile(f *testing.F) {
	for _, pattern := range []string{"../optimizers/*.dsl", "../tests/testdata/dsl/*.dsl"} {
		files, _ := filepath.Glob(pattern)
		for _, path := range files {
			src, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(src))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		u, errs, err := pipeline.Compile("fuzz.dsl", []byte(src))
		if len(errs) > 0 {
			return
		}
		if err != nil {
			if strings.Contains(err.Error(), "in Go; rename one") {
				return // names that Go cannot take are reported, not generated
			}
			t.Fatalf("a source that checks clean failed to build: %v\n%s", err, src)
		}
		k := u.Module
		for _, want := range []string{"define ptx_kernel void @" + k.StepKernel() + "(", "define void @" + k.HostFunc() + "("} {
			if !strings.Contains(k.LL, want) {
				t.Fatalf("the module lacks %q\n%s", want, src)
			}
		}
	})
}
