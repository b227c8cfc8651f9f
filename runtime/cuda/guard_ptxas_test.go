package cuda

import (
	"testing"

	"github.com/fibergen/fibergen/internal/ptxas"
)

// TestGuardPTXAssembles assembles the non-finite guard kernel with ptxas
// for sm_80 and sm_90, where ptxas is at hand, as TestPTXAssembles
// (codegen/llvmgen) does the generated kernels: no stack frame, no spills,
// registers for a block of Block threads.
func TestGuardPTXAssembles(t *testing.T) {
	bin, ok := ptxas.Find()
	if !ok {
		t.Skip("no ptxas (scripts/install-ptxas.sh installs it; or set FIBERGEN_PTXAS)")
	}
	for _, arch := range []string{"sm_80", "sm_90"} {
		ks, err := ptxas.Assemble(bin, []byte(nonFinitePTX), arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			t.Logf("%s %s: %d registers", k.Name, k.Arch, k.Registers)
			if err := k.Fits(Block); err != nil {
				t.Error(err)
			}
		}
	}
}
