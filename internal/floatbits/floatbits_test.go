package floatbits

import (
	"math"
	"strings"
	"testing"
)

func f(bits uint32) float32 { return math.Float32frombits(bits) }

func TestSame(t *testing.T) {
	for _, c := range []struct {
		x, y uint32
		same bool
	}{
		{0x3f800000, 0x3f800000, true},  // 1 and 1
		{0x3f800000, 0x3f800001, false}, // one ulp
		{0x00000000, 0x80000000, false}, // +0 and -0
		{0x7f800000, 0x7f800000, true},  // +Inf
		{0x7f800000, 0xff800000, false}, // +Inf and -Inf
		{0xffc00000, 0x7fffffff, true},  // x86's default NaN and the GPU's
		{0x7fffffff, 0x7fc00000, true},  // the GPU's and arm64's
		{0x7fc00123, 0x7fffffff, true},  // a payload passed on by the CPU, the GPU's arithmetic
		{0xffc00000, 0xffc00000, true},  // one CPU's NaN twice
		{0xffc00000, 0x7fc00000, false}, // two CPUs' NaNs: neither is the GPU's
		{0x7fc00123, 0x7fc00124, false}, // two payloads: a NaN no arithmetic touched must match
		{0x7fffffff, 0x3f800000, false}, // NaN and a number
		{0x7f800000, 0x7fffffff, false}, // Inf and NaN
	} {
		if got := Same(f(c.x), f(c.y)); got != c.same {
			t.Errorf("Same(%#08x, %#08x) = %v, want %v", c.x, c.y, got, c.same)
		}
		if got := Same(f(c.y), f(c.x)); got != c.same {
			t.Errorf("Same(%#08x, %#08x) = %v, want %v (the rule is symmetric)", c.y, c.x, got, c.same)
		}
	}
}

func TestFirstDiff(t *testing.T) {
	nan := f(CanonicalNaN)
	for _, c := range []struct {
		a, b []float32
		want int
	}{
		{nil, nil, -1},
		{[]float32{1, 2, nan}, []float32{1, 2, f(0xffc00000)}, -1},
		{[]float32{1, 2, 3}, []float32{1, 2.5, 4}, 1},
		{[]float32{1, 2}, []float32{1, 2, 3}, 2},
		{[]float32{1, 2, 3}, []float32{1}, 1},
	} {
		if got := FirstDiff(c.a, c.b); got != c.want {
			t.Errorf("FirstDiff(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
		if Equal(c.a, c.b) != (c.want < 0) {
			t.Errorf("Equal(%v, %v) = %v", c.a, c.b, !(c.want < 0))
		}
	}
}

func TestDiff(t *testing.T) {
	if d := Diff([]float32{1, 2}, []float32{1, 2}); d != "" {
		t.Errorf("Diff of equal slices = %q", d)
	}
	d := Diff([]float32{1, 2}, []float32{1, math.Nextafter32(2, 3)})
	for _, want := range []string{"[1]", "0x40000001", "0x40000000", "max 1 ulp"} {
		if !strings.Contains(d, want) {
			t.Errorf("Diff = %q, which lacks %q", d, want)
		}
	}
	if d := Diff([]float32{1, 2}, []float32{1}); d != "1 values, want 2" {
		t.Errorf("Diff of different lengths = %q", d)
	}
}

func TestMaxULP(t *testing.T) {
	for _, c := range []struct {
		a, b []float32
		want uint64
	}{
		{[]float32{1}, []float32{1}, 0},
		{[]float32{0}, []float32{f(0x80000000)}, 1},
		{[]float32{1}, []float32{math.Nextafter32(1, 2)}, 1},
		{[]float32{f(1)}, []float32{f(0x80000001)}, 3}, // the smallest subnormals around ±0
		{[]float32{1}, []float32{1, 2}, math.MaxUint64},
	} {
		if got := MaxULP(c.a, c.b); got != c.want {
			t.Errorf("MaxULP(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestTooManyNaNs(t *testing.T) {
	nan := float32(math.NaN())
	x := make([]float32, 300)
	for _, c := range []struct {
		nans, allowed int
		fails         bool
	}{{0, 0, false}, {3, 0, false}, {4, 0, true}, {4, 1, false}, {150, 0, true}, {150, 147, false}} {
		for i := range x {
			x[i] = 1
			if i < c.nans {
				x[i] = nan
			}
		}
		if err := TooManyNaNs(x, c.allowed); (err != nil) != c.fails {
			t.Errorf("%d NaNs of %d, %d allowed: error %v, want failure %v", c.nans, len(x), c.allowed, err, c.fails)
		}
	}
	if err := TooManyNaNs([]float32{nan}, 0); err == nil {
		t.Error("one value, NaN: no error")
	}
}
