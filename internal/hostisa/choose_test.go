package hostisa

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The features of CPUs for the tables: a Zen 4 or Skylake-SP, a Haswell,
// one without AVX2, and the Zen 4 virtual machine of issue 32, whose
// hypervisor hides lzcnt (which no variant needs).
var (
	haswellCPU = NewFeatures("sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "fma", "f16c")
	avx512CPU  = NewFeatures(append(haswellCPU.Sorted(), "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd")...)
	sandyCPU   = NewFeatures("sse3", "ssse3", "sse4.1", "sse4.2", "avx")
	noBWCPU    = NewFeatures(append(haswellCPU.Sorted(), "avx512f", "avx512dq", "avx512vl")...)
)

// TestChoose picks a variant from a CPU's features and FIBERGEN_HOST_ISA,
// and says why for every variant.
func TestChoose(t *testing.T) {
	for _, c := range []struct {
		name  string
		cpu   Features
		force string
		want  string // Choice.String
	}{
		{"avx512", avx512CPU, "", "avx512: chosen; avx2: not chosen, avx512 is wider; generic: not chosen, avx512 is wider"},
		{"forced avx2", avx512CPU, "avx2", "avx512: not chosen, FIBERGEN_HOST_ISA=avx2; avx2: chosen, FIBERGEN_HOST_ISA=avx2; generic: not chosen, avx2 is wider"},
		{"forced generic", avx512CPU, "generic", "avx512: not chosen, FIBERGEN_HOST_ISA=generic; avx2: not chosen, FIBERGEN_HOST_ISA=generic; generic: chosen, FIBERGEN_HOST_ISA=generic"},
		{"forced the widest", avx512CPU, "avx512", "avx512: chosen, FIBERGEN_HOST_ISA=avx512; avx2: not chosen, avx512 is wider; generic: not chosen, avx512 is wider"},
		{"haswell", haswellCPU, "", "avx512: not chosen, the CPU lacks avx512f, avx512bw, avx512dq, avx512vl; avx2: chosen; generic: not chosen, avx2 is wider"},
		{"no avx512bw", noBWCPU, "", "avx512: not chosen, the CPU lacks avx512bw; avx2: chosen; generic: not chosen, avx2 is wider"},
		{"no avx2", sandyCPU, "", "avx512: not chosen, the CPU lacks avx2, fma, f16c, avx512f, avx512bw, avx512dq, avx512vl; avx2: not chosen, the CPU lacks avx2; generic: chosen"},
		{"nothing", Features{}, "", "avx512: not chosen, the CPU lacks sse3, ssse3, sse4.1, sse4.2, avx, avx2, fma, f16c, avx512f, avx512bw, avx512dq, avx512vl; avx2: not chosen, the CPU lacks sse3, ssse3, sse4.1, sse4.2, avx, avx2; generic: chosen"},
		{"forced generic, nothing", Features{}, "generic", "avx512: not chosen, the CPU lacks sse3, ssse3, sse4.1, sse4.2, avx, avx2, fma, f16c, avx512f, avx512bw, avx512dq, avx512vl; avx2: not chosen, the CPU lacks sse3, ssse3, sse4.1, sse4.2, avx, avx2; generic: chosen, FIBERGEN_HOST_ISA=generic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(For("amd64"), c.cpu, c.force)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got.String()); diff != "" {
				t.Errorf("Choose (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChooseVerdicts holds the structure fg_info and bench --json report.
func TestChooseVerdicts(t *testing.T) {
	got, err := Choose(For("amd64"), noBWCPU, "generic")
	if err != nil {
		t.Fatal(err)
	}
	want := Choice{Chosen: "generic", Variants: []Verdict{
		{Name: "avx512", Reason: "the CPU lacks avx512bw", Missing: []string{"avx512bw"}},
		{Name: "avx2", Reason: "FIBERGEN_HOST_ISA=generic"},
		{Name: "generic", Chosen: true, Reason: "FIBERGEN_HOST_ISA=generic"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Choose (-want +got):\n%s", diff)
	}
}

// TestRunnable lists the variants a test may run: the chosen one down.
func TestRunnable(t *testing.T) {
	for _, c := range []struct {
		cpu           Features
		goarch, force string
		want          string
	}{
		{avx512CPU, "amd64", "", "avx512 avx2 generic"},
		{avx512CPU, "amd64", "avx2", "avx2 generic"},
		{avx512CPU, "amd64", "generic", "generic"},
		{noBWCPU, "amd64", "", "avx2 generic"},
		{sandyCPU, "amd64", "", "generic"},
		{avx512CPU, "arm64", "", "generic"},
	} {
		got, err := Choose(For(c.goarch), c.cpu, c.force)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(strings.Fields(c.want), got.Runnable()); diff != "" {
			t.Errorf("Runnable of %v on %s with %q (-want +got):\n%s", c.cpu.Sorted(), c.goarch, c.force, diff)
		}
	}
}

// TestChooseErrors: an unknown FIBERGEN_HOST_ISA lists the valid values;
// forcing a variant the CPU cannot run names what it lacks.
func TestChooseErrors(t *testing.T) {
	for _, c := range []struct {
		cpu           Features
		goarch, force string
		want          string
	}{
		{avx512CPU, "amd64", "sse9", "FIBERGEN_HOST_ISA=sse9 is not a variant: want generic, avx2 or avx512"},
		{avx512CPU, "amd64", "AVX2", "FIBERGEN_HOST_ISA=AVX2 is not a variant: want generic, avx2 or avx512"},
		{avx512CPU, "arm64", "avx2", "FIBERGEN_HOST_ISA=avx2 is not a variant: want generic"},
		{haswellCPU, "amd64", "avx512", "FIBERGEN_HOST_ISA=avx512: this CPU lacks avx512f, avx512bw, avx512dq, avx512vl, which the avx512 variant is compiled for; it runs avx2 or generic"},
		{noBWCPU, "amd64", "avx512", "FIBERGEN_HOST_ISA=avx512: this CPU lacks avx512bw, which the avx512 variant is compiled for; it runs avx2 or generic"},
		{sandyCPU, "amd64", "avx2", "FIBERGEN_HOST_ISA=avx2: this CPU lacks avx2, which the avx2 variant is compiled for; it runs generic"},
	} {
		_, err := Choose(For(c.goarch), c.cpu, c.force)
		if err == nil || err.Error() != c.want {
			t.Errorf("Choose(%v, %s, %q) = %v, want %q", c.cpu.Sorted(), c.goarch, c.force, err, c.want)
		}
	}
}

// TestFeaturesLocated: the check knows where CPUID reports every feature
// a variant is compiled with (else no CPU would ever run the variant).
func TestFeaturesLocated(t *testing.T) {
	for _, v := range All() {
		for _, f := range v.Features {
			if _, ok := cpuidBits[f]; !ok {
				t.Errorf("%s: feature %s has no CPUID bit in cpuidBits", v.Name, f)
			}
		}
	}
}

// TestRecipeString is what a cache key of the host kernel reads.
func TestRecipeString(t *testing.T) {
	want := "generic{features= tune= vector_bits=128} " +
		"avx2{features=+sse3,+ssse3,+sse4.1,+sse4.2,+avx,+avx2 tune=haswell vector_bits=256} " +
		"avx512{features=+sse3,+ssse3,+sse4.1,+sse4.2,+avx,+avx2,+fma,+f16c,+avx512f,+avx512bw,+avx512dq,+avx512vl tune=skylake-avx512 vector_bits=512}"
	if diff := cmp.Diff(want, For("amd64").String()); diff != "" {
		t.Errorf("For(amd64).String() (-want +got):\n%s", diff)
	}
	if got := For("arm64").String(); got != "generic{features= tune= vector_bits=128}" {
		t.Errorf("For(arm64).String() = %q", got)
	}
}
