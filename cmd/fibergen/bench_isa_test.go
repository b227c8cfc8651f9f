package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/runtime/hostkernel"
	"github.com/google/go-cmp/cmp"
)

// TestBenchISA: on the cpu backend bench says which variant runs and why,
// in text and JSON; the go backend runs none.
func TestBenchISA(t *testing.T) {
	c, err := hostkernel.Choice()
	if err != nil {
		t.Fatal(err)
	}
	r := runBench(optPath("dp_sgd"), "--n", "4096", "--steps", "1", "--threads", "1")
	if want := "\n  isa    " + c.String() + "\n"; r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(c.String(), c.Chosen+": chosen") {
		t.Errorf("cpu: exit %d, stderr %q, stdout:\n%s\nwant the line %q", r.code, r.stderr, r.stdout, want)
	}
	if r := runBench(optPath("dp_sgd"), "--n", "4096", "--steps", "1", "--backend", "go"); strings.Contains(r.stdout, "isa") {
		t.Errorf("go: an isa line:\n%s", r.stdout)
	}
	r = runBench(optPath("dp_sgd"), "--json", "--n", "4096", "--steps", "1", "--threads", "1")
	var got struct {
		Kernel  string         `json:"kernel"`
		HostISA hostisa.Choice `json:"host_isa"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if diff := cmp.Diff(c, got.HostISA); diff != "" {
		t.Errorf("host_isa (-want +got):\n%s", diff)
	}
	if v, _ := hostisa.ByName(c.Chosen); got.Kernel != "dp_sgd_cpu"+v.Suffix {
		t.Errorf("kernel %s, but %s was chosen", got.Kernel, c.Chosen)
	}
}

// TestBenchForcedISA runs the command with FIBERGEN_HOST_ISA: a variant
// this CPU runs is the one bench runs; an unknown one is one line on
// stderr that lists the valid ones, and exit status 1.
func TestBenchForcedISA(t *testing.T) {
	bin := buildBinary(t)
	args := []string{"bench", optPath("dp_sgd"), "--n", "4096", "--steps", "1", "--threads", "1"}
	r := runBinaryEnv(t, bin, []string{hostisa.EnvVar + "=generic"}, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "kernel=dp_sgd_cpu  ") || !strings.Contains(r.stdout, "generic: chosen, FIBERGEN_HOST_ISA=generic\n") {
		t.Errorf("generic: exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
	r = runBinaryEnv(t, bin, []string{hostisa.EnvVar + "=sse9"}, args...)
	if want := "FIBERGEN_HOST_ISA=sse9 is not a variant: want generic, avx2 or avx512"; r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, want) {
		t.Errorf("sse9: exit %d, stdout %q, stderr %q; want exit 1 and %q", r.code, r.stdout, r.stderr, want)
	}
	checkOneLine(t, r.stderr)
}
