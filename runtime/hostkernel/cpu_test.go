package hostkernel

import "testing"

// TestCPUHasAVX2 reads the flags lines of /proc/cpuinfo.
func TestCPUHasAVX2(t *testing.T) {
	v3 := "flags\t\t: fpu sse2 avx avx2 bmi1 bmi2 fma f16c movbe abm\n"
	for _, c := range []struct {
		info string
		want bool
	}{
		{"processor\t: 0\n" + v3, true},
		{"flags\t\t: fpu sse2 avx bmi1 bmi2 fma f16c movbe abm\n", false},  // no avx2
		{"flags\t\t: fpu sse2 avx avx2 bmi1 bmi2 f16c movbe abm\n", false}, // no fma
		{"", false},
	} {
		if got := cpuHasAVX2(c.info); got != c.want {
			t.Errorf("cpuHasAVX2(%q) = %v", c.info, got)
		}
	}
}
