package hostisa

import "testing"

// TestOf names every variant by its symbols' suffix, and the rest generic.
func TestOf(t *testing.T) {
	for _, c := range []struct{ symbol, want string }{
		{"fiber_cpu", "generic"}, {"fiber_cpu_avx2", "avx2"}, {"fiber_privatize_sum_cpu_avx512", "avx512"},
		{"avx2_cpu", "generic"}, {"fiber_abi", "generic"},
	} {
		if got := Of(c.symbol).Name; got != c.want {
			t.Errorf("Of(%q) = %s, want %s", c.symbol, got, c.want)
		}
	}
	for _, v := range All() {
		if w, ok := ByName(v.Name); !ok || w.Suffix != v.Suffix {
			t.Errorf("ByName(%q) = %v, %v", v.Name, w, ok)
		}
	}
	if got := Names(); got != "generic, avx2 or avx512" {
		t.Errorf("Names() = %q", got)
	}
	if len(For("arm64")) != 1 || For("arm64")[0].Name != "generic" {
		t.Errorf("For(arm64) = %v, want only the generic variant", For("arm64"))
	}
}
