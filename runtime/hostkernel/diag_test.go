package hostkernel_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// TestDiagnosticRun loads fiber's clamp_mass host function and checks what
// Run refuses; that it computes the reference's bits is tests/diag_test.go's.
func TestDiagnosticRun(t *testing.T) {
	src, err := os.ReadFile("../../optimizers/fiber.dsl")
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.Compile("fiber.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatal(errs, err)
	}
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(t.TempDir(), "fiber.so")
	if err := tc.SharedObject(u.Module.LL, u.Module.HostFunc(), so); err != nil {
		t.Fatal(err)
	}
	entry := u.Module.Kernels.Diagnostics[0]
	d, err := hostkernel.OpenDiagnostic(so, entry.HostFunction, len(u.Module.Buffers), len(u.Module.Scalars))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	bufs := make([][]float32, len(u.Module.Buffers))
	for i := range bufs {
		bufs[i] = make([]float32, n)
	}
	scalars := make([]float32, len(u.Module.Scalars))
	c := reduce.ReduceChunks(n)
	num, den := make([]float32, c), make([]float32, c)
	if err := d.Run(bufs, scalars, n, 0, c, num, den); err != nil {
		t.Fatalf("Run of %s: %v", d.Name, err)
	}
	for _, bad := range []struct {
		name         string
		bufs         [][]float32
		lo, hi       int
		num, den     []float32
		wantInErrMsg string
	}{
		{"chunks past the end", bufs, 0, c + 1, num, den, "outside"},
		{"backward chunks", bufs, 1, 0, num, den, "outside"},
		{"short partials", bufs, 0, c, num[:1], den, "partials"},
		{"short buffer", append([][]float32{bufs[0][:10]}, bufs[1:]...), 0, c, num, den, "holds 10 values"},
		{"too few buffers", bufs[:1], 0, c, num, den, "takes 7 buffers"},
	} {
		if err := d.Run(bad.bufs, scalars, n, bad.lo, bad.hi, bad.num, bad.den); err == nil || !strings.Contains(err.Error(), bad.wantInErrMsg) {
			t.Errorf("%s: %v, want an error saying %q", bad.name, err, bad.wantInErrMsg)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(bufs, scalars, n, 0, c, num, den); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := hostkernel.OpenDiagnostic(so, "fiber_nothing_cpu", 7, 15); err == nil || !strings.Contains(err.Error(), "no function fiber_nothing_cpu") {
		t.Errorf("OpenDiagnostic of a missing function: %v", err)
	}
}
