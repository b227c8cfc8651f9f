// The narrowing of a stored float32 to bfloat16 (docs/kernels.md, "Storage types"), for the Go
// reference, the runtime and the generated Go packages (which splice this file, RoundSource,
// beside core.go): to nearest, ties to even, or stochastically, with bits that Philox draws
// in a counter space of their own.

package rng

import "math"

// bf16NaN is the one bfloat16 NaN a narrowing stores, whatever NaN it was given (the quiet
// NaN PyTorch's c10::BFloat16 stores): the NaNs of the targets' arithmetic differ in sign and
// payload, the stored bits must not.
const bf16NaN = 0x7fc0

// RoundingSiteBase is the first noise site of the rounding bits: buffer b's bits come from
// site RoundingSiteBase + b/2 (two buffers share a Philox call), far from GradientSite and
// from every site a noise draws.
const RoundingSiteBase = 0x80000000

// bf16Nearest is x to nearest bfloat16, ties to even, as its 16 bits: the IEEE rounding,
// with overflow to ±Inf; every NaN is bf16NaN.
func bf16Nearest(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 {
		return bf16NaN
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// bf16Stochastic is x rounded to a bfloat16 neighbour stochastically by the 16 bits r: up
// (away from zero) with probability equal to the dropped fraction of an ulp, r uniform. A
// value that is a bfloat16 already stays; ±Inf stay; every NaN is bf16NaN.
func bf16Stochastic(x float32, r uint16) uint16 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 {
		return bf16NaN
	}
	return uint16((u + uint32(r)) >> 16)
}

// bf16Widen is the float32 of the bfloat16 bits h: exact.
func bf16Widen(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// roundingBits is the 16 rounding bits of element elem of buffer buf at step under seed:
// half of the Philox word of elem's lane at counter (elem/4, step, RoundingSiteBase + buf/2),
// the low half for an even buf. The bits depend on (seed, step, buffer, element) alone.
func roundingBits(seed uint64, step uint32, buf int, elem uint64) uint16 {
	var c roundingGroup
	return c.bits(seed, step, buf, elem)
}

// roundingGroup keeps the Philox word of the last group of four elements whose rounding bits
// were drawn, for consecutive elements of one buffer at one step.
type roundingGroup struct {
	group uint64
	words [4]uint32
	ok    bool
}

// bits is roundingBits(seed, step, buf, elem), with elem's group kept in c.
func (c *roundingGroup) bits(seed uint64, step uint32, buf int, elem uint64) uint16 {
	if !c.ok || c.group != elem>>2 {
		ctr, key := philoxInput(seed, step, RoundingSiteBase+uint32(buf)/2, elem>>2)
		c.group, c.words, c.ok = elem>>2, philox4x32(ctr, key), true
	}
	return uint16(c.words[elem&3] >> (16 * (uint32(buf) & 1)))
}

// f16NaN is the one float16 NaN a narrowing stores (the quiet NaN of PyTorch's c10::Half,
// positive).
const f16NaN = 0x7e00

// f16Round is x rounded to float16, as its 16 bits: to nearest, ties to even, or, with
// stochastic, up (away from zero) by the 16 random bits r with probability the dropped
// fraction of an ulp — exactly where it drops at most 16 bits (every normal float16, and
// the subnormals from 2^-17), else that fraction rounded down to a multiple of 2^-16. Past
// the largest float16 it rounds to ±Inf as IEEE does (stochastically between 65504 and
// 65536); every NaN is f16NaN. The arithmetic is on the magnitude's bits: a float16 of a
// normal exponent drops 13 of float32's mantissa bits, a subnormal one s = 126 − e of the
// 24 (the implicit one included); the kernels compute the same integer operations.
func f16Round(x float32, stochastic bool, r uint16) uint16 {
	u := math.Float32bits(x)
	sign, a := uint16(u>>16)&0x8000, u&0x7fffffff
	switch {
	case a > 0x7f800000:
		return f16NaN
	case a >= 0x47800000: // 2^16 and past: the next float16 exponent would be Inf's
		return sign | 0x7c00
	}
	e := a >> 23
	if e >= 113 { // a normal float16: rebias the exponent, 127 → 15
		add := 0xfff + (a>>13)&1
		if stochastic {
			add = uint32(r) >> 3
		}
		return sign | uint16((a+add)>>13-112<<10)
	}
	m, s := a&0x7fffff|0x800000, min(126-e, 40) // a float16 subnormal, or zero
	if e == 0 {
		m, s = a, 40 // a float32 subnormal: below 2^-24 of the least float16
	}
	k := m >> min(s, 31) // the whole ulps; s ≥ 24 leaves none
	if stochastic {
		return sign | uint16(k+up(m, s, r))
	}
	return sign | uint16((m+1<<(min(s, 31)-1)-1+k&1)>>min(s, 31))
}

// up is 1 with probability the fraction of 2^s that m's low s bits are, to 2^-16: when r
// plus that fraction's top 16 bits carries past 16 bits, as the additions of bf16Stochastic
// and the normal float16s carry.
func up(m, s uint32, r uint16) uint32 {
	frac := m << (16 - min(s, 16)) & 0xffff // s ≤ 16: the low s bits, scaled up
	if s > 16 {
		frac = m & (1<<min(s, 31) - 1) >> (s - 16)
	}
	return (uint32(r) + frac) >> 16
}

// f16Widen is the float32 of the float16 bits h: exact.
func f16Widen(h uint16) float32 {
	sign, e, m := uint32(h&0x8000)<<16, uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch e {
	case 0: // ±0 and the subnormals: m·2^-24, exact in float32
		return math.Float32frombits(math.Float32bits(float32(m)*(1.0/(1<<24))) | sign)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | m<<13)
	}
	return math.Float32frombits(sign | (e+112)<<23 | m<<13)
}
