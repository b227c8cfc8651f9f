package rng

import (
	"math"
	"math/rand/v2"
	"testing"
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
	NarrowBF16(dst, src, true, seed, step, 4, 5)
	for i, x := range src {
		if want := BF16Widen(BF16Stochastic(x, RoundingBits(seed, step, 4, 5+uint64(i)))); dst[i] != want {
			t.Fatalf("NarrowBF16[%d] = %g, want %g", i, dst[i], want)
		}
	}
}
