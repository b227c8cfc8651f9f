package hostkernel_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// TestForcedISA runs this test binary again with FIBERGEN_HOST_ISA set to
// each variant this CPU runs (the choice is made once per process): Open
// loads that variant, and Choice says it was forced.
func TestForcedISA(t *testing.T) {
	if isa, ok := os.LookupEnv("FIBERGEN_TEST_FORCED_ISA"); ok {
		t.Setenv(hostisa.EnvVar, isa)
		checkForced(t, isa, os.Getenv("FIBERGEN_TEST_SO"))
		return
	}
	so, _ := build(t)
	isas, err := hostkernel.ISAs()
	if err != nil {
		t.Fatal(err)
	}
	for _, isa := range isas {
		cmd := exec.Command(os.Args[0], "-test.run=^TestForcedISA$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "FIBERGEN_TEST_FORCED_ISA="+isa, "FIBERGEN_TEST_SO="+so)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestForcedISA") {
			t.Errorf("FIBERGEN_HOST_ISA=%s: %v\n%s", isa, err, out)
		}
	}
}

// checkForced checks, in a process whose FIBERGEN_HOST_ISA is isa, what
// the runtime chose and what it loads from the tiny optimizer's shared
// object so.
func checkForced(t *testing.T, isa, so string) {
	c, err := hostkernel.Choice()
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen != isa || !strings.Contains(c.String(), isa+": chosen, FIBERGEN_HOST_ISA="+isa) {
		t.Errorf("Choice = %s, want %s chosen as forced", c, isa)
	}
	v, _ := hostisa.ByName(isa)
	k, err := hostkernel.Open(so, "tiny_cpu", 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.Name != "tiny_cpu"+v.Suffix {
		t.Errorf("Open loaded %s, want tiny_cpu%s", k.Name, v.Suffix)
	}
}
