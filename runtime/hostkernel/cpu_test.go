package hostkernel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunnableOn picks the variants from the flags lines of /proc/cpuinfo
// and FIBERGEN_HOST_ISA's cap.
func TestRunnableOn(t *testing.T) {
	v3 := "fpu sse2 avx avx2 bmi1 bmi2 fma f16c movbe abm"
	v4 := v3 + " avx512f avx512bw avx512cd avx512dq avx512vl"
	flags := func(f string) string { return "processor\t: 0\nflags\t\t: " + f + "\n" }
	for _, c := range []struct {
		goarch, cpuinfo, limit string
		want                   string
	}{
		{"amd64", flags(v4), "", "avx512 avx2 generic"},
		{"amd64", flags(v4), "avx2", "avx2 generic"},
		{"amd64", flags(v4), "generic", "generic"},
		{"amd64", flags(v3), "", "avx2 generic"},
		{"amd64", flags(v3), "avx512", "avx2 generic"},
		{"amd64", flags(strings.Replace(v4, " avx512vl", "", 1)), "", "avx2 generic"},
		{"amd64", flags(strings.Replace(v3, " fma", "", 1)), "", "generic"},
		{"amd64", flags("fpu sse2 avx bmi1 bmi2 fma f16c movbe abm"), "", "generic"}, // no avx2
		{"amd64", "", "", "generic"},
		{"arm64", "Features\t: fp asimd\n", "", "generic"},
		{"arm64", "", "avx512", "generic"},
	} {
		vs, err := runnableOn(c.goarch, c.cpuinfo, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range vs {
			got = append(got, v.Name)
		}
		if diff := cmp.Diff(strings.Fields(c.want), got); diff != "" {
			t.Errorf("runnableOn(%s, %q, %q) (-want +got):\n%s", c.goarch, c.cpuinfo, c.limit, diff)
		}
	}
	if _, err := runnableOn("amd64", flags(v4), "sse9"); err == nil || !strings.Contains(err.Error(), "FIBERGEN_HOST_ISA=sse9") {
		t.Errorf("an unknown FIBERGEN_HOST_ISA: %v", err)
	}
}
