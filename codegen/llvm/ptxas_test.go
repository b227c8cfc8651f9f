package llvmgen_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXAssembles assembles the checked-in PTX of every shipped optimizer
// with NVIDIA's ptxas for sm_80 (A100) and sm_90 (H100), where ptxas is at
// hand: $FIBERGEN_PTXAS, or ptxas on PATH (Debian's nvidia-cuda-toolkit, in
// non-free, has it; CI machines do not, so there the test skips).
func TestPTXAssembles(t *testing.T) {
	ptxas := os.Getenv("FIBERGEN_PTXAS")
	if ptxas == "" {
		var err error
		if ptxas, err = exec.LookPath("ptxas"); err != nil {
			t.Skip("no ptxas (set FIBERGEN_PTXAS to check the PTX with NVIDIA's assembler)")
		}
	}
	for _, path := range shipped(t) {
		name := nameOf(path)
		for _, arch := range []string{"sm_80", "sm_90"} {
			out := filepath.Join(t.TempDir(), name+".cubin")
			ptx := filepath.Join("..", "..", "generated", name, name+".ptx")
			cmd := exec.Command(ptxas, "-arch="+arch, "-O3", "-v", ptx, "-o", out)
			msg, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("ptxas -arch=%s %s: %v\n%s", arch, ptx, err, msg)
				continue
			}
			t.Logf("%s %s: %s", name, arch, registersLine(string(msg)))
		}
	}
}

// registersLine returns ptxas's "Used N registers" line.
func registersLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "Used") {
			return strings.TrimSpace(line)
		}
	}
	return strings.TrimSpace(s)
}
