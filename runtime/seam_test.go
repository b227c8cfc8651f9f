package runtime_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// TestRuntimeLinksNoSimulator: the runtime reaches the simulated device
// only through the driver a caller injects (Options.Driver), so neither
// the simulator nor its CUDA driver is among its dependencies.
func TestRuntimeLinksNoSimulator(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the runtime's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/fibergen/fibergen/runtime").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.HasSuffix(d, "/internal/cudasim") || strings.HasSuffix(d, "/internal/ptxsim") {
			t.Errorf("the runtime depends on %s", d)
		}
	}
}

// TestBackendRefusals: Backend ptxsim without the simulated device's
// driver says where it comes from, and a backend without a device refuses
// device memory, each before anything changes.
func TestBackendRefusals(t *testing.T) {
	sim := firstWrite(t, func() (*runtime.Optimizer, error) {
		return runtime.Open(ptxDir(t, "fiber"), runtime.Options{Backend: runtime.PTXSim})
	})
	if sim == nil || !strings.Contains(sim.Error(), "Options.Driver") {
		t.Errorf("ptxsim without a driver: %v, want an error naming Options.Driver", sim)
	}

	o := openDP(t, ptxDir(t, "fiber"), runtime.Options{Backend: runtime.Go}, testDP)
	_, err := o.PrivatizeDevice(0x10000, 8, 0x20000, 0x30000, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "has no device memory") {
		t.Errorf("PrivatizeDevice on the go backend: %v, want a refusal of device memory", err)
	}
	if o.Steps() != 0 {
		t.Errorf("a refused PrivatizeDevice left %d steps", o.Steps())
	}
}
