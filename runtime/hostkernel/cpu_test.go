package hostkernel

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/hostisa"
)

// TestHostISAErrors runs this test binary again with FIBERGEN_HOST_ISA set
// (the choice is made once per process): an unknown value lists the valid
// ones, a variant this CPU lacks names the features it lacks, and neither
// loads a kernel.
func TestHostISAErrors(t *testing.T) {
	if isa, ok := os.LookupEnv("FIBERGEN_TEST_HOST_ISA"); ok {
		t.Setenv(hostisa.EnvVar, isa)
		_, err := ISAs()
		_, loadErr := load("/nonexistent.so", "tiny_cpu", "")
		if err == nil || loadErr == nil || !strings.Contains(loadErr.Error(), err.Error()) {
			t.Fatalf("ISAs: %v; load: %v", err, loadErr)
		}
		os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		return
	}
	c, err := Choice()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"sse9": "hostkernel: FIBERGEN_HOST_ISA=sse9 is not a variant: want generic, avx2 or avx512"}
	for _, d := range c.Variants {
		if len(d.Missing) > 0 {
			cases[d.Name] = "hostkernel: FIBERGEN_HOST_ISA=" + d.Name + ": this CPU lacks " + strings.Join(d.Missing, ", ")
		}
	}
	for isa, want := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostISAErrors$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FIBERGEN_TEST_HOST_ISA="+isa)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ERROR "+want) {
			t.Errorf("FIBERGEN_HOST_ISA=%s: %v\n%s\nwant an error starting %q", isa, err, out, want)
		}
	}
}
