package rng

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/fibergen/fibergen/lang"
)

// nearestBF16 is the bfloat16 nearest x, ties to even, by comparing the two candidates in
// float64: an independent statement of what bf16Nearest computes with integer arithmetic.
func nearestBF16(x float32) float32 {
	u := math.Float32bits(x)
	down := math.Float32frombits(u &^ 0xffff)
	up := math.Float32frombits(u&^0xffff + 0x10000) // the next magnitude, Inf past the largest
	dd, du := math.Abs(float64(x)-float64(down)), math.Abs(float64(up)-float64(x))
	if math.IsInf(float64(up), 0) && u&0x7fffffff < 0x7f800000 {
		// IEEE: overflow when x is at least the largest finite plus half an ulp.
		du = math.Abs(math.Ldexp(1, 128)*float64(sign(x)) - float64(x))
	}
	switch {
	case dd < du:
		return down
	case du < dd:
		return up
	case (u>>16)&1 == 0:
		return down
	}
	return up
}

func sign(x float32) float32 {
	if math.Signbit(float64(x)) {
		return -1
	}
	return 1
}

func TestBF16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []uint32{0, 0x80000000, 0x3f800000, 0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001,
		0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x00000001, 0x00008000, 0x00018000, 0x807fffff}
	for range 200000 {
		cases = append(cases, r.Uint32())
	}
	for _, u := range cases {
		x := math.Float32frombits(u)
		got := BF16Widen(BF16Nearest(x))
		if x != x {
			if BF16Nearest(x) != 0x7fc0 {
				t.Fatalf("NaN %#08x → %#04x, want 0x7fc0", u, BF16Nearest(x))
			}
			continue
		}
		if want := nearestBF16(x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%#08x (%g): got %#08x, want %#08x", u, x, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestBF16StochasticUnbiased checks the defining property exactly: over all 2^16 bit
// patterns, the rounded values sum to 2^16·x, for finite x below the largest bfloat16.
func TestBF16StochasticUnbiased(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		x := math.Float32frombits(r.Uint32() & 0xbf7fffff) // |x| < 2
		var sum float64
		for b := range 1 << 16 {
			sum += float64(BF16Widen(BF16Stochastic(x, uint16(b))))
		}
		if sum != float64(x)*(1<<16) {
			t.Fatalf("x = %g: mean of the stochastic roundings %g", x, sum/(1<<16))
		}
	}
	for _, u := range []uint32{0x7f800000, 0xff800000, 0x3f800000, 0xff7f0000} {
		x := math.Float32frombits(u)
		if got := BF16Widen(BF16Stochastic(x, 0xffff)); got != x {
			t.Errorf("%g, a bfloat16, rounds to %g", x, got)
		}
	}
	if h := BF16Stochastic(float32(math.NaN()), 0xffff); h != 0x7fc0 {
		t.Errorf("NaN → %#04x", h)
	}
}

// TestRoundingBitsCounters checks that the rounding bits are a function of (seed, step,
// buffer, element) drawn from their own Philox counters: not the gradient noise's, and two
// buffers of one site from the two halves of one word.
func TestRoundingBitsCounters(t *testing.T) {
	const seed, step = 9, 4
	for elem := uint64(0); elem < 12; elem++ {
		w := Philox4x32_10([4]uint32{uint32(elem >> 2), 0, step, RoundingSiteBase + 1}, [2]uint32{seed, 0})[elem&3]
		if lo, hi := RoundingBits(seed, step, 2, elem), RoundingBits(seed, step, 3, elem); lo != uint16(w) || hi != uint16(w>>16) {
			t.Fatalf("element %d: bits %#x, %#x from word %#x", elem, lo, hi, w)
		}
	}
	dst, src := make([]float32, 9), []float32{1.00390625, 1.001, -3.3, 0, 7, 1e30, -1e-30, 2.5e-3, 1}
	Narrow(lang.BFloat16, dst, src, true, seed, step, 4, 5)
	for i, x := range src {
		if want := BF16Widen(BF16Stochastic(x, RoundingBits(seed, step, 4, 5+uint64(i)))); dst[i] != want {
			t.Fatalf("Narrow[%d] = %g, want %g", i, dst[i], want)
		}
	}
}

// f16Values are the finite float16 values, in increasing order, with their bits.
func f16Values() (vals []float64, bits []uint16) {
	for h := 0xfbff; h >= 0x8000; h-- { // the negatives, from -65504 up to -0
		vals, bits = append(vals, float64(F16Widen(uint16(h)))), append(bits, uint16(h))
	}
	for h := 0; h <= 0x7bff; h++ {
		vals, bits = append(vals, float64(F16Widen(uint16(h)))), append(bits, uint16(h))
	}
	return vals, bits
}

// TestF16Widen checks the widening against the definition: (-1)^s · 2^(e-15) · (1 + m/1024),
// or m · 2^-24 for e = 0, ±Inf and NaN for e = 31.
func TestF16Widen(t *testing.T) {
	for h := range 1 << 16 {
		s, e, m := h>>15, (h>>10)&0x1f, h&0x3ff
		want := math.Ldexp(1+float64(m)/1024, e-15)
		switch {
		case e == 0:
			want = math.Ldexp(float64(m), -24)
		case e == 31 && m == 0:
			want = math.Inf(1)
		case e == 31:
			want = math.NaN()
		}
		if s == 1 {
			want = -want
		}
		got := float64(F16Widen(uint16(h)))
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("%#04x: %g, want %g", h, got, want)
		}
	}
}

// TestF16Nearest checks rounding to nearest, ties to even, against the nearest of all
// float16 values (by search, in float64), on random and edge float32s.
func TestF16Nearest(t *testing.T) {
	vals, bits := f16Values()
	nearest := func(x float32) uint16 {
		v, sign := float64(x), uint16(math.Float32bits(x)>>16)&0x8000
		switch {
		case math.Abs(v) >= 65520: // half an ulp past the largest: IEEE overflows
			return sign | 0x7c00
		case math.Abs(v) > 65504:
			return sign | 0x7bff
		}
		i := sort.SearchFloat64s(vals, v) // vals[i-1] < v <= vals[i]
		switch {
		case i < len(vals) && vals[i] == v:
			if v == 0 {
				return uint16(math.Float32bits(x)>>16) & 0x8000
			}
			return bits[i]
		case i == 0 || i == len(vals):
			t.Fatalf("%g outside the float16 range", v)
		}
		lo, hi := v-vals[i-1], vals[i]-v
		pick := i
		if lo < hi || lo == hi && bits[i-1]&1 == 0 {
			pick = i - 1
		}
		if vals[pick] == 0 { // a value rounding to zero keeps its sign
			return uint16(math.Float32bits(x)>>16) & 0x8000
		}
		return bits[pick]
	}
	r := rand.New(rand.NewPCG(5, 6))
	cases := []uint32{0, 0x80000000, 0x477fe000, 0x477fefff, 0x477ff000, 0x47800000, 0x38800000, 0x387fffff,
		0x33800000, 0x33000000, 0x33000001, 0x32ffffff, 0x00000001, 0x7f800000, 0xff800000, 0x3f801000, 0x3f803000}
	for range 300000 {
		u := r.Uint32()
		if r.IntN(2) == 0 { // most of the float32 range is outside float16's
			u = u&0x807fffff | (0x66+r.Uint32N(0x2e))<<23
		}
		cases = append(cases, u)
	}
	for _, u := range cases {
		x := math.Float32frombits(u)
		got := F16Round(x, false, 0)
		if x != x {
			if got != 0x7e00 {
				t.Fatalf("NaN %#08x → %#04x", u, got)
			}
			continue
		}
		if want := nearest(x); got != want {
			t.Fatalf("%#08x (%g): %#04x, want %#04x", u, x, got, want)
		}
	}
}

// TestF16StochasticUnbiased checks that over all 2^16 bit patterns the stochastic roundings
// of x average to x exactly where the rounding drops at most 16 bits (|x| ≥ 2^-17), and
// round between x's two float16 neighbours everywhere.
func TestF16StochasticUnbiased(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		e := 0x6e + r.Uint32N(0x80-0x6e+0x10) // from 2^-17 to 2^16
		if i%4 == 0 {
			e = 0x60 + r.Uint32N(0x0e) // below: to 2^-31
		}
		x := math.Float32frombits(r.Uint32()&0x807fffff | e<<23)
		down := F16Widen(F16Round(x, true, 0))
		var sum float64
		for b := range 1 << 16 {
			y := F16Widen(F16Round(x, true, uint16(b)))
			if y != down && math.Abs(float64(y)) <= math.Abs(float64(down)) {
				t.Fatalf("x = %g: %g is not down (%g) or up", x, y, down)
			}
			sum += float64(y)
		}
		if exact := e >= 0x6e; exact && sum != float64(x)*(1<<16) && math.Abs(float64(x)) < 65504 {
			t.Fatalf("x = %g (%#08x): mean of the stochastic roundings %g", x, math.Float32bits(x), sum/(1<<16))
		}
	}
}
