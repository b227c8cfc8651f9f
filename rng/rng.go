// Package rng is fibergen's noise generator: counter-based standard normal draws, a pure
// function of (seed, step, site, element), that the Go reference, the generated Go packages and
// the LLVM kernels (CPU and GPU) compute bit for bit identically.
//
// A draw is Philox4x32-10 (the counter-based generator of Random123 and cuRAND) followed by a
// Box-Muller transform evaluated entirely in float32 with fixed polynomials for log, sin and
// cos, every operation rounded and none fused. There is no state to carry, split or
// synchronize: any element of any step can be drawn in any order, on any device, and gives the
// same bits. The scheme, its constants and its measured accuracy and statistical quality are
// documented in docs/noise.md; its name and version is [Version].
//
// The implementation lives in core.go, which is self-contained so that the code generator can
// splice its declarations ([CoreSource]) into the packages it generates; the exported functions
// wrap it.
package rng

import (
	_ "embed" // for CoreSource

	"github.com/fibergen/fibergen/lang"
)

// Version names the noise scheme. Any change that alters a single output bit must change it.
const Version = "philox4x32-10/box-muller-f32/v1"

// CounterLayout says how a draw's Philox input is formed (docs/noise.md).
const CounterLayout = "Philox4x32-10, key (seed lo, seed hi), counter (element/4 lo, element/4 hi, step, site)"

// CoreSource is the text of core.go: unexported functions and constants importing only
// "math", whose declarations the code generator splices into generated packages.
//
//go:embed core.go
var CoreSource string

// Philox4x32_10 is the Philox4x32-10 block function: ten rounds on the 128-bit counter ctr
// under the 64-bit key key, as in Random123 and cuRAND.
func Philox4x32_10(ctr [4]uint32, key [2]uint32) [4]uint32 {
	return philox4x32(ctr, key)
}

// Normal is the standard normal draw for element elem of noise site site at step step under
// seed seed. Site 0 is the gradient noise of the step kernel. Distinct (seed, step, site, elem)
// never share Philox input; see docs/noise.md.
func Normal(seed uint64, step, site uint32, elem uint64) float32 {
	return gaussian(seed, step, site, elem)
}

// Normal4 is the draws of the four elements 4*group..4*group+3, computed with one Philox call;
// Normal4(seed, step, site, g)[i] == Normal(seed, step, site, 4*g+i) bit for bit.
func Normal4(seed uint64, step, site uint32, group uint64) [4]float32 {
	return gaussian4(seed, step, site, group)
}

// Log32 is the float32 natural logarithm used by the generator (fdlibm logf's main path),
// defined for positive normal float32 inputs.
func Log32(u float32) float32 { return log32(u) }

// Sin32 is the float32 sine used by the generator (Cephes sinf), defined for |x| <= π/4.
func Sin32(x float32) float32 { return sin32(x) }

// Cos32 is the float32 cosine used by the generator (Cephes cosf), defined for |x| <= π/4.
func Cos32(x float32) float32 { return cos32(x) }

// SecureVersion names the secure noise scheme (secure.go, docs/noise.md "Secure mode"): the
// ChaCha20 generator, the Box-Muller pair from 96 + 32 bits and the snapping grid. Any change
// that alters a single output bit must change it.
const SecureVersion = "chacha20/box-muller-f32-u96/snap-2^-8/v1"

// SecureSource is the text of secure.go, spliced into generated packages beside CoreSource.
//
//go:embed secure.go
var SecureSource string

// DrawSource is the text of draw.go, spliced into generated packages beside CoreSource.
//
//go:embed draw.go
var DrawSource string

// ChaCha20Block is the ChaCha20 block function of RFC 8439 on the key k and the state words
// 12..15 ctr (for RFC 8439's layout: the block counter, then the three nonce words).
func ChaCha20Block(k [8]uint32, ctr [4]uint32) [16]uint32 { return chacha20Block(k, ctr) }

// SecureNormal is the secure scheme's standard normal draw for element elem of noise site
// site at step step under the 256-bit key key (four little-endian 64-bit words).
func SecureNormal(key Key, step, site uint32, elem uint64) float32 {
	return secureGaussian8(key, step, site, elem>>3)[elem&7]
}

// SecureNormal8 is the draws of the eight elements 8*octet..8*octet+7, from one ChaCha20
// block.
func SecureNormal8(key Key, step, site uint32, octet uint64) [8]float32 {
	return secureGaussian8(key, step, site, octet)
}

// SnapUnit is the grid of secure noise of standard deviation sigma, and its reciprocal: the
// power of two γ with sigma/512 < γ ≤ sigma/256; 0, 0 for sigma below 2^-117 or not finite.
func SnapUnit(sigma float32) (gamma, inv float32) { return snapUnit(sigma) }

// SnapNoise is the secure scheme's privatized coordinate: x + sigma·z on the grid of
// SnapUnit(sigma) (docs/noise.md).
func SnapNoise(x, sigma, z float32) float32 {
	gamma, inv := snapUnit(sigma)
	return snapNoise(x, sigma, z, gamma, inv)
}

// DeriveKey is the secure key that follows key under label, computed with the cipher: a run
// that must not draw its noise again under key (a resume from a checkpoint) steps under
// DeriveKey(key, label) instead, label counting such events.
func DeriveKey(key Key, label uint64) Key { return deriveKey(key, label) }

// RoundSource is the text of round.go, spliced into generated packages beside CoreSource.
//
//go:embed round.go
var RoundSource string

// BF16Nearest is x rounded to the nearest bfloat16, ties to even, as its 16 bits; every NaN
// is the quiet NaN 0x7fc0 (docs/kernels.md, "Storage types").
func BF16Nearest(x float32) uint16 { return bf16Nearest(x) }

// BF16Stochastic is x rounded to one of its two bfloat16 neighbours by the 16 random bits r:
// away from zero with probability the dropped fraction of an ulp.
func BF16Stochastic(x float32, r uint16) uint16 { return bf16Stochastic(x, r) }

// BF16Widen is the float32 value of the bfloat16 bits h, exactly.
func BF16Widen(h uint16) float32 { return bf16Widen(h) }

// RoundingBits is the 16 stochastic-rounding bits of element elem of buffer buf (its ABI
// position) at step under seed: Philox at counter (elem/4, step, RoundingSiteBase + buf/2),
// disjoint from every noise draw's counter.
func RoundingBits(seed uint64, step uint32, buf int, elem uint64) uint16 {
	return roundingBits(seed, step, buf, elem)
}

// F16Round is x rounded to float16 as its 16 bits: to nearest, ties to even, or with
// stochastic, up by the 16 random bits r with probability the dropped fraction of an ulp
// (to 2^-16 of one); every NaN is 0x7e00 (docs/kernels.md, "Storage types").
func F16Round(x float32, stochastic bool, r uint16) uint16 { return f16Round(x, stochastic, r) }

// F16Widen is the float32 value of the float16 bits h, exactly.
func F16Widen(h uint16) float32 { return f16Widen(h) }

// Narrow stores src into dst rounded to the storage type d (lang.BFloat16 or lang.Float16)
// and widened back, so that dst holds values d holds exactly: to nearest, or with
// stochastic set, by the rounding bits of buffer buf at step under seed, src[i] being global
// element offset+i. lang.Float32 copies.
func Narrow(d lang.DType, dst, src []float32, stochastic bool, seed uint64, step uint32, buf int, offset uint64) {
	var c roundingGroup
	for i, x := range src {
		var r uint16
		if stochastic {
			r = c.bits(seed, step, buf, offset+uint64(i))
		}
		dst[i] = Round(d, x, stochastic, r)
	}
}

// Round is x stored as d and loaded back: to nearest, or stochastically by the 16 bits r.
func Round(d lang.DType, x float32, stochastic bool, r uint16) float32 {
	switch {
	case d == lang.BFloat16 && stochastic:
		return bf16Widen(bf16Stochastic(x, r))
	case d == lang.BFloat16:
		return bf16Widen(bf16Nearest(x))
	case d == lang.Float16:
		return f16Widen(f16Round(x, stochastic, r))
	}
	return x
}

// BF16NaN is the bfloat16 bits every NaN narrows to.
const BF16NaN = bf16NaN

// F16NaN is the float16 bits every NaN narrows to.
const F16NaN = f16NaN

// Bits is x rounded to nearest d (lang.BFloat16 or lang.Float16), as its 16 bits.
func Bits(d lang.DType, x float32) uint16 {
	if d == lang.Float16 {
		return f16Round(x, false, 0)
	}
	return bf16Nearest(x)
}

// Widen is the float32 value of the 16 bits h of d, exactly.
func Widen(d lang.DType, h uint16) float32 {
	if d == lang.Float16 {
		return f16Widen(h)
	}
	return bf16Widen(h)
}
