package llvmgen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fibergen/fibergen/internal/ptxas"
	"github.com/fibergen/fibergen/runtime"
)

// TestPTXAssembles assembles the checked-in PTX of every shipped optimizer
// with NVIDIA's ptxas for sm_80 (A100) and sm_90 (H100), where ptxas is at
// hand ($FIBERGEN_PTXAS or PATH; make test installs it on Debian with
// scripts/install-ptxas.sh, and the test skips without it), and holds
// every kernel to what its launches need: no stack frame, no spills, and
// its registers for the block the runtime launches it with
// (runtime.CUDABlock threads), which a block of more threads than
// ptxas.MaxThreads would not fit: the launch would fail with
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
func TestPTXAssembles(t *testing.T) {
	bin, ok := ptxas.Find()
	if !ok {
		t.Skip("no ptxas (scripts/install-ptxas.sh installs it; or set FIBERGEN_PTXAS)")
	}
	for _, path := range shipped(t) {
		name := nameOf(path)
		ptx, err := os.ReadFile(filepath.Join("..", "..", "generated", name, name+".ptx"))
		if err != nil {
			t.Fatal(err)
		}
		for _, arch := range []string{"sm_80", "sm_90"} {
			ks, err := ptxas.Assemble(bin, ptx, arch)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			for _, k := range ks {
				checkKernelResources(t, k)
			}
		}
	}
}

// checkKernelResources fails t if kernel k needs a stack frame or spills,
// or if its registers do not fit the runtime's block.
func checkKernelResources(t *testing.T, k ptxas.Kernel) {
	t.Helper()
	t.Logf("%s %s: %d registers (blocks of up to %d threads)", k.Name, k.Arch, k.Registers, ptxas.MaxThreads(k.Registers))
	if err := k.Fits(runtime.CUDABlock); err != nil {
		t.Error(err)
	}
}
