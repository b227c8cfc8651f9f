// Core of fibergen's secure noise (docs/noise.md, "Secure mode"): the same contract as the
// default scheme — a pure function of (key, step, site, element) that every target computes
// bit for bit — with a cipher for a generator and a Gaussian snapped to a grid.
//
// Element e of noise site `site` at step `step` under the 256-bit key k is one coordinate of a
// Box-Muller pair drawn from the ChaCha20 block function (RFC 8439) of its octet e>>3:
//
//	state = ["expand 32-byte k", k[0..7], uint32(e>>3), uint32(e>>35), step, site]
//	x     = ChaCha20 block (20 rounds, the input added back)
//	pair p = e&3 (of the octet):  u from the 96 bits x[12+p]:x[4+p]:x[p] (secureUniform)
//	                              r = sqrt(-2 log u),  θ from x[8+p] as in the default scheme
//	coordinate 8(e>>3)+p takes r·cos θ, coordinate 8(e>>3)+4+p takes r·sin θ
//
// u has 24 significant bits at every scale down to 2^-72, so the radius is as finely resolved
// far in the tail as near the mode; the smallest u is 2^-97 (radius sqrt(194 ln 2) ≈ 11.6).
//
// The noise a secure step adds is snapped (snapNoise): g = γ·round((x + σz)/γ), γ the power of
// two with σ/512 < γ ≤ σ/256, so that every output is on the grid γℤ whatever x is. Like
// core.go, this file declares only unexported names and imports only "math", and the code
// generator splices it into generated packages.

package rng

import "math"

// The ChaCha constant "expand 32-byte k", state words 0..3.
const (
	chachaC0 = 0x61707865
	chachaC1 = 0x3320646e
	chachaC2 = 0x79622d32
	chachaC3 = 0x6b206574
)

// chachaKeySite is the site of the counters that derive a key from a key (deriveKey); the
// noise's sites are small.
const chachaKeySite = 0xffffffff

func rotl32(x uint32, n uint) uint32 { return x<<n | x>>(32-n) }

// chachaQuarter is ChaCha's quarter round on a, b, c, d.
func chachaQuarter(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a += b
	d = rotl32(d^a, 16)
	c += d
	b = rotl32(b^c, 12)
	a += b
	d = rotl32(d^a, 8)
	c += d
	b = rotl32(b^c, 7)
	return a, b, c, d
}

// chacha20Block is the ChaCha20 block function of RFC 8439 section 2.3 on the key k and
// the counter words ctr (state words 12..15): ten double rounds, then the input added back.
func chacha20Block(k [8]uint32, ctr [4]uint32) [16]uint32 {
	in := [16]uint32{chachaC0, chachaC1, chachaC2, chachaC3,
		k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], ctr[0], ctr[1], ctr[2], ctr[3]}
	x := in
	for round := 0; round < 10; round++ {
		x[0], x[4], x[8], x[12] = chachaQuarter(x[0], x[4], x[8], x[12])
		x[1], x[5], x[9], x[13] = chachaQuarter(x[1], x[5], x[9], x[13])
		x[2], x[6], x[10], x[14] = chachaQuarter(x[2], x[6], x[10], x[14])
		x[3], x[7], x[11], x[15] = chachaQuarter(x[3], x[7], x[11], x[15])
		x[0], x[5], x[10], x[15] = chachaQuarter(x[0], x[5], x[10], x[15])
		x[1], x[6], x[11], x[12] = chachaQuarter(x[1], x[6], x[11], x[12])
		x[2], x[7], x[8], x[13] = chachaQuarter(x[2], x[7], x[8], x[13])
		x[3], x[4], x[9], x[14] = chachaQuarter(x[3], x[4], x[9], x[14])
	}
	for i := range x {
		x[i] += in[i]
	}
	return x
}

// keyWords splits a 256-bit key given as four little-endian 64-bit words into ChaCha's eight
// 32-bit key words.
func keyWords(key [4]uint64) [8]uint32 {
	var k [8]uint32
	for i, w := range key {
		k[2*i], k[2*i+1] = uint32(w), uint32(w>>32)
	}
	return k
}

// octetCounter is the ChaCha counter words of the octet (elements 8·octet..8·octet+7) at
// (step, site): distinct triples never share a counter since octet < 2^61.
func octetCounter(step, site uint32, octet uint64) [4]uint32 {
	return [4]uint32{uint32(octet), uint32(octet >> 32), step, site}
}

// twoPowM64 and twoPowM96 are 2^-64 and 2^-96, exact in float32.
const (
	twoPowM64 float32 = 1.0 / (1 << 64)
	twoPowM96 float32 = twoPowM64 / (1 << 32)
)

// secureUniform is the uniform of the 96-bit integer X = w2·2^64 + w1·2^32 + w0: its top 64
// bits hi = X>>32 converted to float32 (round to nearest even) times 2^-64 where hi ≥ 2^32, else
// (float32(X) + 0.5)·2^-96 (X < 2^64 then). Either way u in [2^-97, 1] has 24 significant bits
// wherever X ≥ 2^24, that is for u ≥ 2^-72.
func secureUniform(w0, w1, w2 uint32) float32 {
	hi := uint64(w2)<<32 | uint64(w1)
	if hi >= 1<<32 {
		return float32(hi) * twoPowM64
	}
	return (float32(hi<<32|uint64(w0)) + 0.5) * twoPowM96
}

// secureRadius is sqrt(-2 log u), u = secureUniform(w0, w1, w2).
func secureRadius(w0, w1, w2 uint32) float32 {
	u := secureUniform(w0, w1, w2)
	l := log32(u)
	t := float32(-2 * l)
	return float32(math.Sqrt(float64(t)))
}

// secureGaussian8 is the eight standard normal draws of the octet at (key, step, site), in
// element order.
func secureGaussian8(key [4]uint64, step, site uint32, octet uint64) [8]float32 {
	x := chacha20Block(keyWords(key), octetCounter(step, site, octet))
	var out [8]float32
	for p := 0; p < 4; p++ {
		r := secureRadius(x[p], x[4+p], x[12+p])
		q, a := angle(x[8+p])
		sn, cs := sin32(a), cos32(a)
		out[p] = r * cosQuadrant(q, sn, cs)
		out[4+p] = r * cosQuadrant(q-1, sn, cs)
	}
	return out
}

// snapBits is log2 of σ/γ's range: γ is the power of two with σ/2^snapBits < γ ≤ σ/2^(snapBits-1).
const snapBits = 9

// snapMagic is 1.5·2^23: (q + snapMagic) - snapMagic rounds q to the nearest integer, ties to
// even, for |q| ≤ 2^22; for larger |q| the result is still an integer (the float32 spacing there
// is at least 1, or the sum rounds to an even one), so every output stays on the grid.
const snapMagic float32 = 12582912

// snapUnit is the grid γ of the noise of standard deviation sigma and its reciprocal: γ =
// 2^(E-8) for sigma in [2^E, 2^(E+1)). Both are 0 where sigma is below 2^-117 (no grid: no
// noise to speak of) or not finite.
func snapUnit(sigma float32) (gamma, inv float32) {
	e := int32(math.Float32bits(sigma)>>23&0xff) - 127 // sigma ≥ 0: its sign bit is clear
	if e < -117 || e > 127 {
		return 0, 0
	}
	g := uint32(e-snapBits+1+127) << 23
	i := uint32(127-(e-snapBits+1)) << 23
	return math.Float32frombits(g), math.Float32frombits(i)
}

// snapNoise is a secure step's privatized coordinate: x + sigma·z rounded to the grid γℤ of
// snapUnit(sigma), to the nearest point (ties to even) where |x + sigma·z| ≤ 2^22·γ; NaN stays
// NaN. Without a grid (gamma 0) it is x + sigma·z as the default scheme adds it.
func snapNoise(x, sigma, z, gamma, inv float32) float32 {
	t := x + float32(sigma*z)
	if gamma == 0 {
		return t
	}
	q := float32(t * inv)
	q = float32(q+snapMagic) - snapMagic
	return q * gamma
}

// deriveKey is the key that follows key under label: the first eight words of the ChaCha20
// block at counter (label, 0, chachaKeySite), so that a key never used for noise again
// yields a fresh one with no new secret (a resume, docs/noise.md).
func deriveKey(key [4]uint64, label uint64) [4]uint64 {
	x := chacha20Block(keyWords(key), [4]uint32{uint32(label), uint32(label >> 32), 0, chachaKeySite})
	var out [4]uint64
	for i := range out {
		out[i] = uint64(x[2*i]) | uint64(x[2*i+1])<<32
	}
	return out
}
