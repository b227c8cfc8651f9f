package main

import (
	"encoding/json"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/explain"
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

// TestExplainHostISA: explain --host-isa lists the variants with their
// features and this CPU's verdicts, in text and JSON; without the flag,
// nothing of the host.
func TestExplainHostISA(t *testing.T) {
	c, err := hostkernel.Choice()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := cmdExplain([]string{optPath("dp_sgd"), "--host-isa"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	if !strings.Contains(text, "\nhost kernel (cpu backend) on this CPU: "+c.Chosen+"\n") {
		t.Errorf("no host kernel section for %s:\n%s", c.Chosen, text)
	}
	for _, d := range c.Variants {
		if !strings.Contains(text, "\n  "+d.String()+" ") {
			t.Errorf("no line for %q:\n%s", d, text)
		}
	}
	out.Reset()
	if code := cmdExplain([]string{optPath("dp_sgd"), "--host-isa", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		HostISA explain.HostISA `json:"host_isa"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatal(err)
	}
	if want := explain.DescribeHostISA(hostisa.For(goruntime.GOARCH), c); !cmp.Equal(*want, got.HostISA) {
		t.Errorf("host_isa (-want +got):\n%s", cmp.Diff(*want, got.HostISA))
	}
	out.Reset()
	if cmdExplain([]string{optPath("dp_sgd")}, &out, &errb); strings.Contains(out.String(), "host kernel") {
		t.Errorf("explain without --host-isa describes the host:\n%s", out.String())
	}
}

// TestDescribeHostISA joins a recipe's variants with the verdicts on a CPU
// that has AVX2 and not AVX-512.
func TestDescribeHostISA(t *testing.T) {
	r := hostisa.For("amd64")
	c, err := hostisa.Choose(r, hostisa.NewFeatures("sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2"), "")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	(&explain.Explanation{HostISA: explain.DescribeHostISA(r, c)}).WriteText(&out)
	for _, want := range []string{
		"host kernel (cpu backend) on this CPU: avx2\n",
		"  avx512: not chosen, the CPU lacks fma, f16c, avx512f, avx512bw, avx512dq, avx512vl 512-bit  sse3 ssse3 sse4.1 sse4.2 avx avx2 fma f16c avx512f avx512bw avx512dq avx512vl\n",
		"  avx2: chosen                                  256-bit  sse3 ssse3 sse4.1 sse4.2 avx avx2\n",
		"  generic: not chosen, avx2 is wider            128-bit  the architecture's baseline\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in:\n%s", want, out.String())
		}
	}
}
