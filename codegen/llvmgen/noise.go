package llvmgen

import (
	"math"
	"slices"

	"github.com/fibergen/fibergen/internal/hostisa"

	"github.com/fibergen/fibergen/rng"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file emits fibergen's noise generator (scheme rng.Version, specified
// in docs/noise.md) into a module: Philox4x32-10 keyed by the seed, with the
// counter (global group, step, site), and Box-Muller with log and sin/cos
// built from basic IEEE float32 operations. It follows package rng, the Go
// reference, operation for operation, so every target draws the same bits.

// noise holds the module's noise functions.
type noise struct {
	// device and host are the scalar draws the kernels' loops call: one
	// element, one Philox group, one secure octet. The host's are never
	// inlined: its head, group and tail loops step a few coordinates a
	// range, and each variant compiles one copy of the draws instead of
	// one a loop (the copy has no variant's target features, so its results
	// are scalars, 128-bit vectors or arrays: the same registers whatever
	// the caller's features). The device's are inlined: ptxsim has no calls.
	device, host drawFuncs
	// gaussianC, by width w (hostWidths): the Gaussians of w groups in
	// coordinate order, element v holding coordinates w·v..w·v+w-1.
	gaussianC map[lanes]*llvm.Func
	secure    secureFuncs
}

// hostGroups is the least number of groups of four coordinates a host
// function's main loop draws at once, one per SIMD lane.
const hostGroups = 8

// hostGroupsFor is the number of groups the main loop of the host step
// variant v draws at once: one group per 32-bit lane of its registers, at
// least hostGroups.
func hostGroupsFor(v hostisa.Variant) lanes {
	return max(hostGroups, lanes(v.VectorBits/32))
}

// hostWidths are the widths of the host variants' main loops.
func hostWidths() []lanes {
	var ws []lanes
	for _, v := range hostisa.All() {
		if w := hostGroupsFor(v); !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return ws
}

// emitNoise adds the noise functions to m: scalar ones for the NVPTX
// kernel and the host's head and tail, and SIMD ones for the host's main
// loops, which draw hostGroupsFor groups at once (the same IEEE operations
// lane by lane, so the same bits).
func emitNoise(m *llvm.Module) noise {
	ns := noise{gaussianC: map[lanes]*llvm.Func{}}
	trig := map[lanes][3]*llvm.Func{}
	for _, w := range append([]lanes{1}, hostWidths()...) {
		philox := emitPhilox(m, w)
		trig[w] = [3]*llvm.Func{emitLog32(m, w), emitSin32(m, w), emitCos32(m, w)}
		pair := emitPair(m, w, trig[w])
		if w == 1 {
			ns.device = drawFuncs{elem: emitGaussian(m, "fg_gaussian", philox, pair), group: emitGaussian4(m, "fg_gaussian4", philox, pair)}
			ns.host = drawFuncs{elem: emitGaussian(m, "fg_gaussian_call", philox, pair), group: emitGaussian4(m, "fg_gaussian4_call", philox, pair)}
			continue
		}
		ns.gaussianC[w] = emitGaussianC(m, w, emitGaussianW(m, w, philox, pair))
	}
	ns.secure = emitSecure(m, trig)
	ns.device.octet, ns.host.octet = ns.secure.octet, ns.secure.called
	for _, f := range []*llvm.Func{ns.host.elem, ns.host.group} {
		f.FuncAttrs = []llvm.FuncAttribute{enum.FuncAttrNoInline, enum.FuncAttrNoUnwind}
	}
	return ns
}

// drawFuncs are the scalar draws a kernel's loops call.
type drawFuncs struct {
	elem  *llvm.Func // (seed i64, step i32, site i32, elem i64) float
	group *llvm.Func // (seed i64, step i32, site i32, group i64) <4 x float>
	octet *llvm.Func // (key0..3 i64, step i32, site i32, octet i64) [8 x float]
}

// emitPhilox emits fg_philox(c0, c1, c2, c3, k0, k1) [4 x i32] (w lanes of
// counters: [4 x <w x i32>]): ten rounds, the key bumped between rounds.
func emitPhilox(m *llvm.Module, w lanes) *llvm.Func {
	var params []*llvm.Param
	for _, name := range []string{"c0", "c1", "c2", "c3"} {
		params = append(params, llvm.NewParam(name, w.i32()))
	}
	params = append(params, llvm.NewParam("k0", i32), llvm.NewParam("k1", i32))
	out := types.NewArray(4, w.i32())
	f, b := newHelper(m, "fg_philox"+w.suffix(), out, params...)
	c := []value.Value{params[0], params[1], params[2], params[3]}
	k0, k1 := value.Value(params[4]), value.Value(params[5])
	if w > 1 {
		c = philoxWide(b, w, c, k0, k1)
	} else {
		for round := 0; round < 10; round++ {
			if round > 0 {
				k0, k1 = b.NewAdd(k0, i32c(rng.PhiloxW0)), b.NewAdd(k1, i32c(rng.PhiloxW1))
			}
			hi0, lo0 := mulHiLo(b, w, rng.PhiloxM0, c[0])
			hi1, lo1 := mulHiLo(b, w, rng.PhiloxM1, c[2])
			c = []value.Value{b.NewXor(b.NewXor(hi1, c[1]), w.splat(b, k0)), lo1, b.NewXor(b.NewXor(hi0, c[3]), w.splat(b, k1)), lo0}
		}
	}
	var res value.Value = constantUndef(out)
	for i, x := range c {
		res = b.NewInsertValue(res, x, uint64(i))
	}
	b.NewRet(res)
	return f
}

// philoxWide runs the ten rounds on w lanes of counters c with the same
// integer results as the scalar rounds, but keeps every word in a 64-bit
// lane whose high half is ignored: the multiplies read only the low halves
// (x86's vpmuludq does exactly this), the low word of a product is the
// product itself, and xor never carries garbage down. This avoids packing
// and unpacking 32-bit lanes around every multiply, which is what LLVM
// emits for zext-mul-trunc on <8 x i32>.
func philoxWide(b *llvm.Block, w lanes, c []value.Value, k0, k1 value.Value) []value.Value {
	wide := make([]value.Value, 4)
	for i, x := range c {
		wide[i] = b.NewZExt(x, w.i64())
	}
	mask := w.u64(0xffffffff)
	mul := func(a uint32, x value.Value) (hi, p value.Value) {
		p = b.NewMul(b.NewAnd(x, mask), w.u64(int64(a)))
		return b.NewLShr(p, w.u64(32)), p
	}
	key := func(k value.Value) value.Value { return w.splat(b, b.NewZExt(k, i64)) }
	for round := 0; round < 10; round++ {
		if round > 0 {
			k0, k1 = b.NewAdd(k0, i32c(rng.PhiloxW0)), b.NewAdd(k1, i32c(rng.PhiloxW1))
		}
		hi0, p0 := mul(rng.PhiloxM0, wide[0])
		hi1, p1 := mul(rng.PhiloxM1, wide[2])
		wide = []value.Value{b.NewXor(b.NewXor(hi1, wide[1]), key(k0)), p1, b.NewXor(b.NewXor(hi0, wide[3]), key(k1)), p0}
	}
	for i, x := range wide {
		c[i] = b.NewTrunc(x, w.i32())
	}
	return c
}

// mulHiLo returns the high and low words of the 64-bit product a·x.
func mulHiLo(b *llvm.Block, w lanes, a uint32, x value.Value) (hi, lo value.Value) {
	p := b.NewMul(b.NewZExt(x, w.i64()), w.u64(int64(a)))
	return b.NewTrunc(b.NewLShr(p, w.u64(32)), w.i32()), b.NewTrunc(p, w.i32())
}

// fdlibm's logf coefficients and ln 2 split in two (rng's bit patterns).
var (
	lg1, lg2, lg3, lg4 = f32bits(rng.LogLg1Bits), f32bits(rng.LogLg2Bits), f32bits(rng.LogLg3Bits), f32bits(rng.LogLg4Bits)
	ln2Hi, ln2Lo       = f32bits(rng.LogLn2HiBits), f32bits(rng.LogLn2LoBits)
)

func f32bits(b uint32) float32 { return math.Float32frombits(b) }

// emitLog32 emits fg_log32(u): fdlibm's logf main path for positive normal u.
func emitLog32(m *llvm.Module, w lanes) *llvm.Func {
	u := llvm.NewParam("u", w.f32())
	f, b := newHelper(m, "fg_log32"+w.suffix(), w.f32(), u)
	ix := b.NewBitCast(u, w.i32())
	var k value.Value = b.NewSub(b.NewLShr(ix, w.u32(23)), w.u32(127))
	mant := b.NewAnd(ix, w.u32(0x007fffff))
	i := b.NewAnd(b.NewAdd(mant, w.u32(0x95f64<<3)), w.u32(0x800000))
	x := b.NewBitCast(b.NewOr(mant, b.NewXor(i, w.u32(0x3f800000))), w.f32())
	k = b.NewAdd(k, b.NewLShr(i, w.u32(23)))
	fv := b.NewFSub(x, w.f(1))
	s := b.NewFDiv(fv, b.NewFAdd(w.f(2), fv))
	z := b.NewFMul(s, s)
	ww := b.NewFMul(z, z)
	t1 := b.NewFMul(ww, b.NewFAdd(w.f(lg2), b.NewFMul(ww, w.f(lg4))))
	t2 := b.NewFMul(z, b.NewFAdd(w.f(lg1), b.NewFMul(ww, w.f(lg3))))
	r := b.NewFAdd(t2, t1)
	hfsq := b.NewFMul(b.NewFMul(w.f(0.5), fv), fv)
	dk := b.NewSIToFP(k, w.f32())
	inner := b.NewFAdd(b.NewFMul(s, b.NewFAdd(hfsq, r)), b.NewFMul(dk, w.f(ln2Lo)))
	b.NewRet(b.NewFSub(b.NewFMul(dk, w.f(ln2Hi)), b.NewFSub(b.NewFSub(hfsq, inner), fv)))
	return f
}

// poly2 returns (c0·z + c1)·z + c2.
func poly2(b *llvm.Block, w lanes, c [3]float32, z value.Value) value.Value {
	p := b.NewFAdd(b.NewFMul(w.f(c[0]), z), w.f(c[1]))
	return b.NewFAdd(b.NewFMul(p, z), w.f(c[2]))
}

// emitSin32 emits fg_sin32(x) = p(z)·z·x + x for |x| <= π/4.
func emitSin32(m *llvm.Module, w lanes) *llvm.Func {
	x := llvm.NewParam("x", w.f32())
	f, b := newHelper(m, "fg_sin32"+w.suffix(), w.f32(), x)
	z := b.NewFMul(x, x)
	p := b.NewFMul(b.NewFMul(poly2(b, w, rng.SinCoefs, z), z), x)
	b.NewRet(b.NewFAdd(p, x))
	return f
}

// emitCos32 emits fg_cos32(x) = (p(z)·z·z - 0.5·z) + 1 for |x| <= π/4.
func emitCos32(m *llvm.Module, w lanes) *llvm.Func {
	x := llvm.NewParam("x", w.f32())
	f, b := newHelper(m, "fg_cos32"+w.suffix(), w.f32(), x)
	z := b.NewFMul(x, x)
	p := b.NewFMul(b.NewFMul(poly2(b, w, rng.CosCoefs, z), z), z)
	h := b.NewFMul(w.f(0.5), z)
	b.NewRet(b.NewFAdd(b.NewFSub(p, h), w.f(1)))
	return f
}

// emitPair emits fg_pair(xr, xa) {float, float}: the Box-Muller pair
// r·cos(θ), r·sin(θ) with r = sqrt(-2 log u), u = (xr + 0.5)·2^-32 and
// θ = 2π(xa + 0.5)/2^32 = q·π/2 + x, q the quadrant.
func emitPair(m *llvm.Module, w lanes, trig [3]*llvm.Func) *llvm.Func {
	xr, xa := llvm.NewParam("xr", w.i32()), llvm.NewParam("xa", w.i32())
	out := types.NewStruct(w.f32(), w.f32())
	f, b := newHelper(m, "fg_pair"+w.suffix(), out, xr, xa)
	u := b.NewFMul(b.NewFAdd(b.NewUIToFP(xr, w.f32()), w.f(0.5)), w.f(0x1p-32))
	r := b.NewCall(w.sqrt(m), b.NewFMul(w.f(-2), b.NewCall(trig[0], u)))
	zc, zs := rotate(b, w, r, xa, trig[1], trig[2])
	var res value.Value = constantUndef(out)
	res = b.NewInsertValue(res, zc, 0)
	res = b.NewInsertValue(res, zs, 1)
	b.NewRet(res)
	return f
}

// rotate returns r·cos θ and r·sin θ for the angle θ = 2π(xa + 0.5)/2^32
// = q·π/2 + x, q the quadrant, from the polynomials sin and cos of x.
func rotate(b *llvm.Block, w lanes, r, xa value.Value, sin, cos *llvm.Func) (value.Value, value.Value) {
	y := b.NewAdd(xa, w.u32(0x20000000))
	q := b.NewLShr(y, w.u32(30))
	frac := b.NewSub(b.NewAnd(y, w.u32(0x3fffffff)), w.u32(0x20000000))
	x := b.NewFMul(b.NewFAdd(b.NewSIToFP(frac, w.f32()), w.f(0.5)), w.f(rng.AngleStep))
	sn, cs := b.NewCall(sin, x), b.NewCall(cos, x)
	odd := b.NewICmp(enum.IPredNE, b.NewAnd(q, w.u32(1)), w.u32(0))
	cosNeg := b.NewICmp(enum.IPredNE, b.NewAnd(b.NewAdd(q, w.u32(1)), w.u32(2)), w.u32(0))
	sinNeg := b.NewICmp(enum.IPredNE, b.NewAnd(q, w.u32(2)), w.u32(0))
	cosV := negateIf(b, w, cosNeg, b.NewSelect(odd, sn, cs))
	sinV := negateIf(b, w, sinNeg, b.NewSelect(odd, cs, sn))
	return b.NewFMul(r, cosV), b.NewFMul(r, sinV)
}

// negateIf returns -x where cond holds, else x, flipping the sign bit.
func negateIf(b *llvm.Block, w lanes, cond, x value.Value) value.Value {
	return b.NewSelect(cond, bitFlip(b, w, x, false), x)
}

// philoxCall calls philox on the counter (group, step, site) and the key seed.
func philoxCall(b *llvm.Block, philox *llvm.Func, seed, step, site, group value.Value) value.Value {
	lo := func(x value.Value) value.Value { return b.NewTrunc(x, i32) }
	hi := func(x value.Value) value.Value { return b.NewTrunc(b.NewLShr(x, i64c(32)), i32) }
	return b.NewCall(philox, lo(group), hi(group), step, site, lo(seed), hi(seed))
}

// emitGaussianW emits fg_gaussian_v<w>(seed, step, site, group): the
// Gaussians of the w groups from group, one group per SIMD lane: element i of
// the result holds lane i of every group (0: r·cos of the first pair, 1: r·sin
// of the first pair, 2 and 3: of the second pair), its element j group+j.
func emitGaussianW(m *llvm.Module, w lanes, philox, pairFn *llvm.Func) *llvm.Func {
	ps := noiseParams("group")
	out := types.NewArray(4, w.f32())
	f, b := newHelper(m, "fg_gaussian"+w.suffix(), out, ps...)
	groups := w.from(b, ps[3])
	hiGroups := b.NewLShr(groups, w.u64(32))
	lo := func(x value.Value) value.Value { return b.NewTrunc(x, i32) }
	x := b.NewCall(philox, b.NewTrunc(groups, w.i32()), b.NewTrunc(hiGroups, w.i32()),
		w.splat(b, ps[1]), w.splat(b, ps[2]), lo(ps[0]), lo(b.NewLShr(ps[0], i64c(32))))
	var res value.Value = constantUndef(out)
	for p := 0; p < 2; p++ {
		zs := b.NewCall(pairFn, b.NewExtractValue(x, uint64(2*p)), b.NewExtractValue(x, uint64(2*p+1)))
		for j := 0; j < 2; j++ {
			res = b.NewInsertValue(res, b.NewExtractValue(zs, uint64(j)), uint64(2*p+j))
		}
	}
	b.NewRet(res)
	return f
}

func noiseParams(last string) []*llvm.Param {
	return []*llvm.Param{llvm.NewParam("seed", i64), llvm.NewParam("step", i32), llvm.NewParam("site", i32), llvm.NewParam(last, i64)}
}

// emitGaussian emits fg_gaussian(seed, step, site, elem): the Gaussian of
// one element, lane elem&3 of group elem>>2.
func emitGaussian(m *llvm.Module, name string, philox, pairFn *llvm.Func) *llvm.Func {
	ps := noiseParams("elem")
	f, b := newHelper(m, name, f32, ps...)
	group, lane := b.NewLShr(ps[3], i64c(2)), b.NewTrunc(b.NewAnd(ps[3], i64c(3)), i32)
	x := philoxCall(b, philox, ps[0], ps[1], ps[2], group)
	low := b.NewICmp(enum.IPredULT, lane, i32c(2))
	xr := b.NewSelect(low, b.NewExtractValue(x, 0), b.NewExtractValue(x, 2))
	xa := b.NewSelect(low, b.NewExtractValue(x, 1), b.NewExtractValue(x, 3))
	zs := b.NewCall(pairFn, xr, xa)
	even := b.NewICmp(enum.IPredEQ, b.NewAnd(lane, i32c(1)), i32c(0))
	b.NewRet(b.NewSelect(even, b.NewExtractValue(zs, 0), b.NewExtractValue(zs, 1)))
	return f
}

// emitGaussian4 emits fg_gaussian4(seed, step, site, group): the Gaussians
// of the four elements of a group from one Philox call.
func emitGaussian4(m *llvm.Module, name string, philox, pairFn *llvm.Func) *llvm.Func {
	ps := noiseParams("group")
	f, b := newHelper(m, name, vec4, ps...)
	x := philoxCall(b, philox, ps[0], ps[1], ps[2], ps[3])
	var out value.Value = constantUndef(vec4)
	for p := 0; p < 2; p++ {
		zs := b.NewCall(pairFn, b.NewExtractValue(x, uint64(2*p)), b.NewExtractValue(x, uint64(2*p+1)))
		for j := 0; j < 2; j++ {
			out = b.NewInsertElement(out, b.NewExtractValue(zs, uint64(j)), i32c(uint32(2*p+j)))
		}
	}
	b.NewRet(out)
	return f
}

// emitGaussianC emits fg_gaussian_c<w>(seed, step, site, group): the result
// of gw (lane order: element i, lane j is coordinate 4j+i) transposed to
// coordinate order (element v, lane l is coordinate w·v+l), so that the host
// loop can load and store whole vectors. The transpose is spelled as the
// unpack/blend pattern of a 4×4 transpose per 128-bit block plus a final
// block gather (12 shuffles for 8 lanes); left to itself, LLVM built it from
// single-element inserts. Only lanes move: the bits are gw's.
func emitGaussianC(m *llvm.Module, w lanes, gw *llvm.Func) *llvm.Func {
	ps := noiseParams("group")
	out := types.NewArray(4, w.f32())
	f, b := newHelper(m, "fg_gaussian_c"+w.suffix()[2:], out, ps...)
	z := b.NewCall(gw, ps[0], ps[1], ps[2], ps[3])
	var res value.Value = constantUndef(out)
	transposeGroups(b, w, z, func(v int, x value.Value) { res = b.NewInsertValue(res, x, uint64(v)) })
	b.NewRet(res)
	return f
}

// transposeGroups calls emit(v, x) for v = 0..3 with vector v of the
// aggregate z ([4 x <w x T>], element i lane j the value of coordinate
// 4j+i) in coordinate order (lane l of vector v coordinate w·v+l).
func transposeGroups(b *llvm.Block, w lanes, z value.Value, emit func(v int, x value.Value)) {
	r := make([]value.Value, 4)
	for i := range r {
		r[i] = b.NewExtractValue(z, uint64(i))
	}
	// Within each block of four lanes: t0/t1 interleave r0 and r1, t2/t3
	// r2 and r3; u_k then holds, in block m, the four values of group 4m+k.
	t := []value.Value{
		shuffle(b, w, r[0], r[1], blockMask(w, 0, 4, 1, 5)), shuffle(b, w, r[0], r[1], blockMask(w, 2, 6, 3, 7)),
		shuffle(b, w, r[2], r[3], blockMask(w, 0, 4, 1, 5)), shuffle(b, w, r[2], r[3], blockMask(w, 2, 6, 3, 7)),
	}
	u := []value.Value{
		shuffle(b, w, t[0], t[2], blockMask(w, 0, 1, 4, 5)), shuffle(b, w, t[0], t[2], blockMask(w, 2, 3, 6, 7)),
		shuffle(b, w, t[1], t[3], blockMask(w, 0, 1, 4, 5)), shuffle(b, w, t[1], t[3], blockMask(w, 2, 3, 6, 7)),
	}
	for v := 0; v < 4; v++ {
		emit(v, gatherGroups(b, w, u, v))
	}
}

// blockMask is the shuffle mask that applies the four-lane pattern p (0-3:
// the first operand's lanes of the block, 4-7: the second's) to every block
// of four lanes.
func blockMask(w lanes, p ...int) []int {
	var mask []int
	for blk := 0; blk < int(w); blk += 4 {
		for _, x := range p {
			if x < 4 {
				mask = append(mask, blk+x)
			} else {
				mask = append(mask, int(w)+blk+x-4)
			}
		}
	}
	return mask
}

// gatherGroups returns output vector v of the transpose: groups
// v·w/4 .. v·w/4+w/4-1, group g being block g/4 of u[g%4]; pairs of
// sources are merged with two-operand shuffles.
func gatherGroups(b *llvm.Block, w lanes, u []value.Value, v int) value.Value {
	per := int(w) / 4
	var acc value.Value
	for g := v * per; g < (v+1)*per; g++ {
		src, blk := u[g%4], g/4
		var mask []int
		if acc == nil {
			for j := 0; j < int(w); j++ {
				mask = append(mask, (blk*4+j%4)%int(w))
			}
			acc = shuffle(b, w, src, src, mask)
			continue
		}
		pos := (g - v*per) * 4
		for j := 0; j < int(w); j++ {
			if j >= pos && j < pos+4 {
				mask = append(mask, int(w)+blk*4+j-pos)
			} else {
				mask = append(mask, j)
			}
		}
		acc = shuffle(b, w, acc, src, mask)
	}
	return acc
}

// shuffle is a shufflevector of x and y with the given lane mask.
func shuffle(b *llvm.Block, w lanes, x, y value.Value, mask []int) value.Value {
	elems := make([]constant.Constant, len(mask))
	for i, m := range mask {
		elems[i] = i32c(uint32(m))
	}
	return b.NewShuffleVector(x, y, constant.NewVector(types.NewVector(uint64(w), i32), elems...))
}
