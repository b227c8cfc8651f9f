// Core of fibergen's noise generator: counter-based Gaussian noise that the Go reference, the
// generated Go packages and the LLVM kernels compute bit for bit identically.
//
// Element e of noise site `site` at step `step` under seed `seed` is one coordinate of a
// Box-Muller pair drawn from Philox4x32-10:
//
//	ctr = [uint32(e>>2), uint32(e>>34), step, site], key = [uint32(seed), uint32(seed>>32)]
//	x   = Philox4x32-10(ctr, key)
//	lanes 0,1 (e&3) use (xr, xa) = (x[0], x[1]); lanes 2,3 use (x[2], x[3])
//	r   = sqrt(-2 log u),  u = (xr + 0.5) * 2^-32 in (0, 1]
//	z   = r cos(2π(xa+0.5)/2^32) for even lanes, r sin(...) for odd lanes
//
// All arithmetic is float32, rounded after every operation: the logarithm, sine and cosine are
// fixed polynomials (fdlibm logf, Cephes sinf/cosf) evaluated in a fixed order, and every
// product that feeds an addition is wrapped in an explicit float32 conversion so that the Go
// compiler may not fuse it into an FMA (the Go specification allows fusing x*y+z otherwise).
// The only library call is math.Sqrt on a float32 widened to float64, which rounded back to
// float32 is the correctly rounded float32 square root.
//
// This file is self-contained: it declares only unexported functions and constants and imports
// only "math", so the code generator splices all of its declarations, as go/printer prints
// them, into the packages it generates. The specification, with every constant's bit pattern, is
// docs/noise.md.

package rng

import "math"

// Philox4x32-10 constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011;
// the same values as Random123 and cuRAND).
const (
	philoxM0 = 0xD2511F53 // multiplier applied to ctr[0]
	philoxM1 = 0xCD9E8D57 // multiplier applied to ctr[2]
	philoxW0 = 0x9E3779B9 // key bump for key[0] (golden ratio)
	philoxW1 = 0xBB67AE85 // key bump for key[1] (sqrt(3) - 1)
)

// philox4x32 is Philox4x32-10: ten rounds, the key bumped between rounds (the first round uses
// the key as given). One round: (hi0, lo0) = M0·c0, (hi1, lo1) = M1·c2 (64-bit products),
// c = [hi1^c1^k0, lo1, hi0^c3^k1, lo0]. The words live in locals, not arrays, which makes it
// about five times faster in Go.
func philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for round := 0; round < 10; round++ {
		if round > 0 {
			k0 += philoxW0
			k1 += philoxW1
		}
		p0 := uint64(philoxM0) * uint64(c0)
		p1 := uint64(philoxM1) * uint64(c2)
		c0, c1, c2, c3 = uint32(p1>>32)^c1^k0, uint32(p1), uint32(p0>>32)^c3^k1, uint32(p0)
	}
	return [4]uint32{c0, c1, c2, c3}
}

// philoxInput is the Philox counter and key of the group of four elements 4*group..4*group+3.
// (group, step, site) fills the 128-bit counter without overlap, so distinct triples never
// share a counter; group < 2^62 because it is an element index divided by 4.
func philoxInput(seed uint64, step, site uint32, group uint64) ([4]uint32, [2]uint32) {
	ctr := [4]uint32{uint32(group), uint32(group >> 32), step, site}
	key := [2]uint32{uint32(seed), uint32(seed >> 32)}
	return ctr, key
}

// Float32 bit patterns of the fdlibm logf constants (FreeBSD e_logf.c). The bit patterns are
// normative.
const (
	logLg1Bits   = 0x3f2aaaaa // 0.66666662693
	logLg2Bits   = 0x3eccce13 // 0.40000972152
	logLg3Bits   = 0x3e91e9ee // 0.28498786688
	logLg4Bits   = 0x3e789e26 // 0.24279078841
	logLn2HiBits = 0x3f317180 // 6.9313812256e-01
	logLn2LoBits = 0x3717f7d1 // 9.0580006145e-06
)

// log32 is the natural logarithm of a positive normal float32, fdlibm logf's main path used
// for every input: u = 2^k * (1+f) with 1+f in [sqrt(2)/2, sqrt(2)), then
// log(1+f) = f - (hfsq - s*(hfsq+R)) with s = f/(2+f) and R a polynomial in s^2.
func log32(u float32) float32 {
	lg1 := math.Float32frombits(logLg1Bits)
	lg2 := math.Float32frombits(logLg2Bits)
	lg3 := math.Float32frombits(logLg3Bits)
	lg4 := math.Float32frombits(logLg4Bits)
	ln2Hi := math.Float32frombits(logLn2HiBits)
	ln2Lo := math.Float32frombits(logLn2LoBits)

	ix := math.Float32bits(u)
	k := int32(ix>>23) - 127
	ix &= 0x007fffff
	i := (ix + (0x95f64 << 3)) & 0x800000
	m := math.Float32frombits(ix | (i ^ 0x3f800000)) // normalize m to [sqrt(2)/2, sqrt(2))
	k += int32(i >> 23)
	f := m - 1

	s := f / (2 + f)
	z := float32(s * s)
	w := float32(z * z)
	t1 := float32(w * (lg2 + float32(w*lg4)))
	t2 := float32(z * (lg1 + float32(w*lg3)))
	r := t2 + t1
	hfsq := float32(float32(0.5*f) * f)
	dk := float32(k)
	return float32(dk*ln2Hi) - ((hfsq - (float32(s*(hfsq+r)) + float32(dk*ln2Lo))) - f)
}

// Cephes sinf/cosf polynomial coefficients (valid for |x| <= π/4).
const (
	sinS3 float32 = -1.9515295891e-4
	sinS2 float32 = 8.3321608736e-3
	sinS1 float32 = -1.6666654611e-1
	cosC3 float32 = 2.443315711809948e-5
	cosC2 float32 = -1.388731625493765e-3
	cosC1 float32 = 4.166664568298827e-2
)

// sin32 is the sine of x for |x| <= π/4 (Cephes sinf): x + x*z*P(z), z = x*x.
func sin32(x float32) float32 {
	z := float32(x * x)
	p := float32(sinS3*z) + sinS2
	p = float32(p*z) + sinS1
	p = float32(p * z)
	p = float32(p * x)
	return p + x
}

// cos32 is the cosine of x for |x| <= π/4 (Cephes cosf): 1 - z/2 + z*z*Q(z), z = x*x.
func cos32(x float32) float32 {
	z := float32(x * x)
	p := float32(cosC3*z) + cosC2
	p = float32(p*z) + cosC1
	p = float32(p * z)
	p = float32(p * z)
	h := float32(0.5 * z)
	return (p - h) + 1
}

// twoPowM32 is 2^-32, exact in float32.
const twoPowM32 float32 = 1.0 / (1 << 32)

// boxMullerRadius is sqrt(-2 log u) with u = (xr + 0.5) * 2^-32 in [2^-33, 1]: the uint32 to
// float32 conversion rounds to nearest even, then one float32 add and one float32 multiply.
// The largest radius, at xr = 0, is sqrt(66 ln 2) ≈ 6.7637.
func boxMullerRadius(xr uint32) float32 {
	u := (float32(xr) + 0.5) * twoPowM32
	l := log32(u)
	t := float32(-2 * l)
	return float32(math.Sqrt(float64(t)))
}

// angleStep is the float32 nearest π/2^31, one step of the 32-bit angle in radians.
const angleStep float32 = math.Pi / 2147483648

// angle splits the Box-Muller angle 2π(xa+0.5)/2^32 into a quadrant q in 0..3 and a reduced
// angle x with |x| <= π/4 (up to rounding), so that the angle is q·π/2 + x. The reduction is
// exact integer arithmetic: xa + 2^29 puts the quadrant boundaries at multiples of 2^30.
func angle(xa uint32) (q uint32, x float32) {
	y := xa + 0x20000000
	q = y >> 30
	f := float32(int32((y & 0x3fffffff) - 0x20000000))
	f = f + 0.5
	return q, float32(f * angleStep)
}

// cosQuadrant is cos(q·π/2 + x) given sn = sin(x) and cs = cos(x); sin(q·π/2 + x) is
// cosQuadrant(q-1, ...). Only the low two bits of q matter.
func cosQuadrant(q uint32, sn, cs float32) float32 {
	switch q & 3 {
	case 0:
		return cs
	case 1:
		return -sn
	case 2:
		return -cs
	default:
		return sn
	}
}

// gaussian is the standard normal draw of element elem at (seed, step, site). It computes only
// what the element's lane needs: one Philox call, one radius and one of sin32/cos32.
func gaussian(seed uint64, step, site uint32, elem uint64) float32 {
	ctr, key := philoxInput(seed, step, site, elem>>2)
	x := philox4x32(ctr, key)
	lane := uint32(elem & 3)
	xr, xa := x[0], x[1]
	if lane >= 2 {
		xr, xa = x[2], x[3]
	}
	r := boxMullerRadius(xr)
	q, a := angle(xa)
	q -= lane & 1 // odd lanes take sin(θ) = cos(θ - π/2)
	var v float32
	if q&1 == 0 {
		v = cos32(a)
	} else {
		v = sin32(a)
	}
	if q&3 == 1 || q&3 == 2 {
		v = -v
	}
	return r * v
}

// gaussian4 is the four draws of elements 4*group..4*group+3 at (seed, step, site), sharing
// one Philox call and one radius, sine and cosine per pair; element 4*group+i equals
// gaussian(seed, step, site, 4*group+i) bit for bit.
func gaussian4(seed uint64, step, site uint32, group uint64) [4]float32 {
	ctr, key := philoxInput(seed, step, site, group)
	x := philox4x32(ctr, key)
	var out [4]float32
	for p := 0; p < 2; p++ {
		r := boxMullerRadius(x[2*p])
		q, a := angle(x[2*p+1])
		sn, cs := sin32(a), cos32(a)
		out[2*p] = r * cosQuadrant(q, sn, cs)
		out[2*p+1] = r * cosQuadrant(q-1, sn, cs)
	}
	return out
}
