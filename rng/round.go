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
