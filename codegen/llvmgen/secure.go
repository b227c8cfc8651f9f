package llvmgen

import (
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file emits the secure noise scheme (rng.SecureVersion, rng/secure.go,
// docs/noise.md): the ChaCha20 block function keyed by the run's 256-bit key
// with the counter (octet, step, site), Box-Muller with the radius from 64
// bits, and the snapping of g + σz to the grid γℤ. It follows package rng
// operation for operation.

// secureFuncs holds the module's secure noise functions.
type secureFuncs struct {
	// octet is (key0..3 i64, step i32, site i32, octet i64) [8 x float],
	// inlined (the device's draw); called is the same function never
	// inlined (the host's: noise.host).
	octet, called *llvm.Func
	// wide, by host width w: the Gaussians of w/2 octets in coordinate
	// order, element v holding coordinates w·v..w·v+w-1.
	wide map[lanes]*llvm.Func
}

var arr8 = types.NewArray(8, f32)

// emitSecure adds the secure noise functions to m, sharing the log, sine
// and cosine of the default scheme's width w functions.
func emitSecure(m *llvm.Module, trig map[lanes][3]*llvm.Func) secureFuncs {
	sf := secureFuncs{wide: map[lanes]*llvm.Func{}}
	one := trig[1]
	chacha, pair := emitChaCha(m, 1), emitSecurePair(m, 1, one)
	sf.octet = emitSecureOctet(m, "fg_secure8", chacha, pair)
	sf.called = emitSecureOctet(m, "fg_secure8_call", chacha, pair)
	sf.called.FuncAttrs = []llvm.FuncAttribute{enum.FuncAttrNoInline, enum.FuncAttrNoUnwind}
	for _, w := range hostWidths() {
		sf.wide[w] = emitSecureWide(m, w, emitChaCha(m, w), emitSecurePair(m, w, trig[w]))
	}
	return sf
}

func keyParams(last string) []*llvm.Param {
	ps := []*llvm.Param{llvm.NewParam("key0", i64), llvm.NewParam("key1", i64), llvm.NewParam("key2", i64), llvm.NewParam("key3", i64)}
	return append(ps, llvm.NewParam("step", i32), llvm.NewParam("site", i32), llvm.NewParam(last, i64))
}

// emitChaCha emits fg_chacha20(k0..k7 i32, c0, c1 <w x i32>, step, site
// i32) [16 x <w x i32>]: the ChaCha20 block of the counter words (c0, c1,
// step, site) in every lane, the input added back.
func emitChaCha(m *llvm.Module, w lanes) *llvm.Func {
	var ps []*llvm.Param
	for i := 0; i < 8; i++ {
		ps = append(ps, llvm.NewParam("", i32))
	}
	ps = append(ps, llvm.NewParam("c0", w.i32()), llvm.NewParam("c1", w.i32()), llvm.NewParam("step", i32), llvm.NewParam("site", i32))
	out := types.NewArray(16, w.i32())
	f, b := newHelper(m, "fg_chacha20"+w.suffix(), out, ps...)
	in := []value.Value{w.u32(0x61707865), w.u32(0x3320646e), w.u32(0x79622d32), w.u32(0x6b206574)}
	for _, k := range ps[:8] {
		in = append(in, w.splat(b, k))
	}
	in = append(in, ps[8], ps[9], w.splat(b, ps[10]), w.splat(b, ps[11]))
	loop, done := f.NewBlock("rounds"), f.NewBlock("done")
	b.NewBr(loop)
	// The ten double rounds as a loop, not unrolled: a tenth of the code
	// for opt and llc to work through in every variant, for the same bits.
	x := make([]value.Value, 16)
	phis := make([]*llvm.InstPhi, 16)
	for i := range x {
		phis[i] = loop.NewPhi(llvm.NewIncoming(in[i], b))
		x[i] = phis[i]
	}
	round := loop.NewPhi(llvm.NewIncoming(i32c(0), b))
	doubleRound(loop, w, x)
	next := loop.NewAdd(round, i32c(1))
	for i, p := range phis {
		p.Incs = append(p.Incs, llvm.NewIncoming(x[i], loop))
	}
	round.Incs = append(round.Incs, llvm.NewIncoming(next, loop))
	loop.NewCondBr(loop.NewICmp(enum.IPredULT, next, i32c(10)), loop, done)
	var res value.Value = constantUndef(out)
	for i := range x {
		res = done.NewInsertValue(res, done.NewAdd(x[i], in[i]), uint64(i))
	}
	done.NewRet(res)
	return f
}

// doubleRound emits ChaCha's column round and diagonal round on the state x
// (w lanes), replacing its words by the results.
func doubleRound(b *llvm.Block, w lanes, x []value.Value) {
	rotl := func(v value.Value, n uint32) value.Value {
		return b.NewOr(b.NewShl(v, w.u32(n)), b.NewLShr(v, w.u32(32-n)))
	}
	quarter := func(a, bb, c, d int) {
		for _, s := range [][2]uint32{{16, 12}, {8, 7}} {
			x[a] = b.NewAdd(x[a], x[bb])
			x[d] = rotl(b.NewXor(x[d], x[a]), s[0])
			x[c] = b.NewAdd(x[c], x[d])
			x[bb] = rotl(b.NewXor(x[bb], x[c]), s[1])
		}
	}
	for _, q := range [8][4]int{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15},
		{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}} {
		quarter(q[0], q[1], q[2], q[3])
	}
}

// emitSecurePair emits fg_secure_pair(w0, w1, w2, xa) {float, float}: r·cos
// θ and r·sin θ with r = sqrt(-2 log u), u the uniform of the 96 bits
// w2:w1:w0 (rng's secureUniform), and θ from xa as in the default scheme.
func emitSecurePair(m *llvm.Module, w lanes, trig [3]*llvm.Func) *llvm.Func {
	w0, w1, w2 := llvm.NewParam("w0", w.i32()), llvm.NewParam("w1", w.i32()), llvm.NewParam("w2", w.i32())
	xa := llvm.NewParam("xa", w.i32())
	out := types.NewStruct(w.f32(), w.f32())
	f, b := newHelper(m, "fg_secure_pair"+w.suffix(), out, w0, w1, w2, xa)
	join := func(h, l value.Value) value.Value {
		return b.NewOr(b.NewShl(b.NewZExt(h, w.i64()), w.u64(32)), b.NewZExt(l, w.i64()))
	}
	hi := join(w2, w1)
	high := b.NewFMul(b.NewUIToFP(hi, w.f32()), w.f(0x1p-64))
	low := b.NewFMul(b.NewFAdd(b.NewUIToFP(join(w1, w0), w.f32()), w.f(0.5)), w.f(0x1p-96))
	u := b.NewSelect(b.NewICmp(enum.IPredNE, w2, w.u32(0)), high, low)
	r := b.NewCall(w.sqrt(m), b.NewFMul(w.f(-2), b.NewCall(trig[0], u)))
	zc, zs := rotate(b, w, r, xa, trig[1], trig[2])
	var res value.Value = constantUndef(out)
	res = b.NewInsertValue(res, zc, 0)
	b.NewRet(b.NewInsertValue(res, zs, 1))
	return f
}

// chachaCall calls chacha on the key's eight words, the octets' counter
// words and (step, site).
func chachaCall(b *llvm.Block, chacha *llvm.Func, key []*llvm.Param, lo, hi, step, site value.Value) value.Value {
	var args []value.Value
	for _, k := range key {
		args = append(args, b.NewTrunc(k, i32), b.NewTrunc(b.NewLShr(k, i64c(32)), i32))
	}
	return b.NewCall(chacha, append(args, lo, hi, step, site)...)
}

// securePairs returns the octets' eight draws, element p of the octet being
// r·cos of pair p and element 4+p its r·sin (rng/secure.go).
func securePairs(b *llvm.Block, pair *llvm.Func, x value.Value) [8]value.Value {
	var z [8]value.Value
	for p := 0; p < 4; p++ {
		word := func(i int) value.Value { return b.NewExtractValue(x, uint64(i)) }
		zs := b.NewCall(pair, word(p), word(4+p), word(12+p), word(8+p))
		z[p], z[4+p] = b.NewExtractValue(zs, 0), b.NewExtractValue(zs, 1)
	}
	return z
}

// emitSecureOctet emits name(key, step, site, octet): the eight Gaussians
// of an octet from one ChaCha20 block, as an array — not a vector, whose
// registers differ between a caller compiled for AVX and a callee compiled
// without it (the called copy has no variant's target features).
func emitSecureOctet(m *llvm.Module, name string, chacha, pair *llvm.Func) *llvm.Func {
	ps := keyParams("octet")
	f, b := newHelper(m, name, arr8, ps...)
	lo, hi := b.NewTrunc(ps[6], i32), b.NewTrunc(b.NewLShr(ps[6], i64c(32)), i32)
	z := securePairs(b, pair, chachaCall(b, chacha, ps[:4], lo, hi, ps[4], ps[5]))
	var out value.Value = constantUndef(arr8)
	for i, v := range z {
		out = b.NewInsertValue(out, v, uint64(i))
	}
	b.NewRet(out)
	return f
}

// secureElem emits the secure draw of global element e: element e&7 of its
// octet's draws, chosen by a tree of selects on the index's bits (a
// variable extractelement would put the vector in NVPTX's local memory).
func secureElem(b *llvm.Block, d *draw, e value.Value) value.Value {
	z := d.call(b, d.octet, b.NewLShr(e, i64c(3)))
	vals := make([]value.Value, 8)
	for i := range vals {
		vals[i] = b.NewExtractValue(z, uint64(i))
	}
	return selectByBits(b, vals, e)
}

// selectByBits emits vals[i] (vals[len-1] for an i past it) by a tree of
// selects on i's bits, lowest first: no variable index, which NVPTX would
// put in local memory.
func selectByBits(b *llvm.Block, vals []value.Value, i value.Value) value.Value {
	for bit := int64(0); len(vals) > 1; bit++ {
		set := b.NewICmp(enum.IPredNE, b.NewAnd(i, i64c(1<<bit)), i64c(0))
		next := make([]value.Value, (len(vals)+1)/2)
		for j := range next {
			next[j] = vals[2*j]
			if 2*j+1 < len(vals) {
				next[j] = b.NewSelect(set, vals[2*j+1], vals[2*j])
			}
		}
		vals = next
	}
	return vals[0]
}

// emitSecureWide emits fg_secure_c<w>(key, step, site, octet): the draws
// of the w octets from octet, one octet per lane, rearranged to coordinate
// order: element v, lane l of the result is coordinate 8·octet + w·v + l.
func emitSecureWide(m *llvm.Module, w lanes, chacha, pair *llvm.Func) *llvm.Func {
	ps := keyParams("octet")
	out := types.NewArray(8, w.f32())
	f, b := newHelper(m, "fg_secure_c"+w.suffix()[2:], out, ps...)
	octets := w.from(b, ps[6])
	lo, hi := b.NewTrunc(octets, w.i32()), b.NewTrunc(b.NewLShr(octets, w.u64(32)), w.i32())
	z := securePairs(b, pair, chachaCall(b, chacha, ps[:4], lo, hi, ps[4], ps[5]))
	var res value.Value = constantUndef(out)
	for v, vec := range octetOrder(b, w, z) {
		res = b.NewInsertValue(res, vec, uint64(v))
	}
	b.NewRet(res)
	return f
}

// octetOrder transposes z, draw p of the octet in lane l being z[p] lane l,
// to coordinate order — the sequence z[0][0], z[1][0], …, z[7][0],
// z[0][1], … in vectors of w lanes — by three rounds of interleaving,
// 24 two-operand shuffles: interleaving z[p] with z[p+4], then those with
// each other two apart, then one apart, puts the eight in order. Only lanes
// move: the bits are z's.
func octetOrder(b *llvm.Block, w lanes, z [8]value.Value) []value.Value {
	seqs := make([][]value.Value, 8)
	for p := range seqs {
		seqs[p] = []value.Value{z[p]}
	}
	for half := 4; half >= 1; half /= 2 {
		next := make([][]value.Value, half)
		for p := range next {
			next[p] = interleave(b, w, seqs[p], seqs[p+half])
		}
		seqs = next
	}
	return seqs[0]
}

// interleave returns the sequence x[0], y[0], x[1], y[1], … of the
// sequences x and y, each held in vectors of w lanes.
func interleave(b *llvm.Block, w lanes, x, y []value.Value) []value.Value {
	var out []value.Value
	for i := range x {
		for _, from := range []int{0, int(w) / 2} {
			mask := make([]int, w)
			for j := range mask {
				mask[j] = from + j/2 + j%2*int(w)
			}
			out = append(out, shuffle(b, w, x[i], y[i], mask))
		}
	}
	return out
}

// snapGrid emits the grid of the noise of standard deviation sigma
// (rng's snapUnit): γ and 1/γ, both 0 where sigma's exponent field is
// below 10 or 255.
func snapGrid(b *llvm.Block, sigma value.Value) (gamma, inv value.Value) {
	fld := b.NewAnd(b.NewLShr(b.NewBitCast(sigma, i32), i32c(23)), i32c(0xff))
	ok := b.NewAnd(b.NewICmp(enum.IPredUGE, fld, i32c(10)), b.NewICmp(enum.IPredULE, fld, i32c(254)))
	bits := func(field value.Value) value.Value {
		return b.NewBitCast(b.NewSelect(ok, b.NewShl(field, i32c(23)), i32c(0)), f32)
	}
	return bits(b.NewSub(fld, i32c(8))), bits(b.NewSub(i32c(262), fld))
}

// snap emits rng's snapNoise on w lanes: x + sigma·z, its quotient by γ
// rounded to an integer (the nearest, ties to even, up to 2^22) by adding
// and subtracting 1.5·2^23, times γ; x + sigma·z where γ is 0.
func snap(b *llvm.Block, w lanes, x, z value.Value, d *draw) value.Value {
	t := b.NewFAdd(x, b.NewFMul(w.splat(b, d.sigma), z))
	q := b.NewFMul(t, w.splat(b, d.inv))
	r := b.NewFSub(b.NewFAdd(q, w.f(12582912)), w.f(12582912))
	y := b.NewFMul(r, w.splat(b, d.gamma))
	none := b.NewFCmp(enum.FPredOEQ, d.gamma, f32c(0))
	return b.NewSelect(none, t, y)
}
