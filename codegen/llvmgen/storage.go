package llvmgen

import (
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file is the buffers' storage in the kernels (ir.Storage,
// docs/kernels.md "Storage types"): a bfloat16 or float16 buffer is an
// array of i16; a load widens it exactly, a store narrows with integer
// operations that compute rng/round.go's bits on every target — no bf16
// or f16 instruction, so the same code runs on every host variant and
// every PTX target (cvt.rn.bf16.f32 needs sm_80 and would give a NaN other
// bits).

var (
	i16    = types.I16
	i16Ptr = types.NewPointer(types.I16)
)

// elemType is the LLVM type of one value stored as s.
func elemType(s ir.Storage) types.Type {
	if s.Narrow() {
		return i16
	}
	return f32
}

// storage is buffer i's.
func (k *kernel) storage(i int) ir.Storage { return k.Buffers[i].Storage }

// narrowPtr is p, a float * of the host ABI, as a pointer to buffer i's
// stored values.
func (k *kernel) narrowPtr(b *llvm.Block, i int, p value.Value) value.Value {
	if k.storage(i).Narrow() {
		return b.NewBitCast(p, i16Ptr)
	}
	return p
}

// lanesAt is a pointer to w values stored as s at index idx of p.
func lanesAt(b *llvm.Block, s ir.Storage, p, idx value.Value, w lanes) value.Value {
	t := elemType(s)
	ptr := b.NewGetElementPtr(t, p, idx)
	if w == 1 {
		return ptr
	}
	return b.NewBitCast(ptr, types.NewPointer(w.vec(t)))
}

// alignOf is the alignment of an access of w values stored as s whose
// float32 access is aligned to align bytes.
func alignOf(s ir.Storage, align int) int { return align * s.DType.Size() / 4 }

// loadStored loads w values stored as s at index idx of p, as floats: a
// bfloat16 widens exactly. align is the float32 access's alignment.
func loadStored(b *llvm.Block, s ir.Storage, p, idx value.Value, w lanes, align int) value.Value {
	x := load(b, w.vec(elemType(s)), lanesAt(b, s, p, idx, w), alignOf(s, align))
	switch s.DType {
	case lang.BFloat16:
		return b.NewBitCast(b.NewShl(b.NewZExt(x, w.i32()), w.u32(16)), w.f32())
	case lang.Float16:
		return widenF16(b, w, x)
	}
	return x
}

// storeStored stores the w floats x at index idx of p, narrowed to s:
// stochastically by the low 16 bits of bits (w lanes of i32) where s says
// so. align is as loadStored's.
func storeStored(b *llvm.Block, s ir.Storage, p, idx, x value.Value, w lanes, align int, bits value.Value) {
	switch s.DType {
	case lang.BFloat16:
		x = narrowBF16(b, w, x, bits)
	case lang.Float16:
		x = narrowF16(b, w, x, bits)
	}
	store(b, x, lanesAt(b, s, p, idx, w), alignOf(s, align))
}

// narrowBF16 is the bfloat16 bits of the floats x (w lanes): to nearest,
// ties to even, with bits nil (rng.BF16Nearest), else rounded up by the
// random 16 bits of bits (rng.BF16Stochastic); every NaN is the one NaN.
func narrowBF16(b *llvm.Block, w lanes, x, bits value.Value) value.Value {
	u := b.NewBitCast(x, w.i32())
	var add value.Value
	if bits == nil {
		add = b.NewAdd(w.u32(0x7fff), b.NewAnd(b.NewLShr(u, w.u32(16)), w.u32(1)))
	} else {
		add = b.NewAnd(bits, w.u32(0xffff))
	}
	h := b.NewTrunc(b.NewLShr(b.NewAdd(u, add), w.u32(16)), w.vec(i16))
	nan := b.NewICmp(enum.IPredUGT, b.NewAnd(u, w.u32(0x7fffffff)), w.u32(0x7f800000))
	return b.NewSelect(nan, w.konst(constant.NewInt(i16, rng.BF16NaN)), h)
}

// narrowF16 is the float16 bits of the floats x (w lanes), as rng.F16Round
// computes them — to nearest even with bits nil, else stochastically by
// the low 16 bits of bits — with selects for its branches.
func narrowF16(b *llvm.Block, w lanes, x, bits value.Value) value.Value {
	c := w.u32
	sel := func(cond enum.IPred, l, r, t, f value.Value) value.Value {
		return b.NewSelect(b.NewICmp(cond, l, r), t, f)
	}
	u := b.NewBitCast(x, w.i32())
	sign, a := b.NewAnd(b.NewLShr(u, c(16)), c(0x8000)), b.NewAnd(u, c(0x7fffffff))
	e := b.NewLShr(a, c(23))
	// A normal float16: 13 bits dropped, the exponent rebiased.
	var addN value.Value = b.NewAdd(c(0xfff), b.NewAnd(b.NewLShr(a, c(13)), c(1)))
	if bits != nil {
		addN = b.NewLShr(b.NewAnd(bits, c(0xffff)), c(3))
	}
	normal := b.NewSub(b.NewLShr(b.NewAdd(a, addN), c(13)), c(112<<10))
	// A subnormal one or zero: s in [14, 40] bits of the 24 dropped.
	e0 := b.NewICmp(enum.IPredEQ, e, c(0))
	m := b.NewSelect(e0, a, b.NewOr(b.NewAnd(a, c(0x7fffff)), c(0x800000)))
	s := sel(enum.IPredULT, b.NewSub(c(126), e), c(14), c(14), b.NewSub(c(126), e))
	s = b.NewSelect(e0, c(40), sel(enum.IPredUGT, s, c(40), c(40), s))
	s31 := sel(enum.IPredUGT, s, c(31), c(31), s)
	k := b.NewLShr(m, s31)
	var subnormal value.Value
	if bits == nil {
		half := b.NewSub(b.NewShl(c(1), b.NewSub(s31, c(1))), c(1))
		subnormal = b.NewLShr(b.NewAdd(b.NewAdd(m, half), b.NewAnd(k, c(1))), s31)
	} else {
		s16 := sel(enum.IPredUGT, s, c(16), c(16), s)
		low := b.NewAnd(b.NewShl(m, b.NewSub(c(16), s16)), c(0xffff))
		high := b.NewLShr(b.NewAnd(m, b.NewSub(b.NewShl(c(1), s31), c(1))), b.NewSub(sel(enum.IPredULT, s, c(16), c(16), s), c(16)))
		frac := sel(enum.IPredULE, s, c(16), low, high)
		subnormal = b.NewAdd(k, b.NewLShr(b.NewAdd(b.NewAnd(bits, c(0xffff)), frac), c(16)))
	}
	h := sel(enum.IPredUGE, e, c(113), normal, subnormal)
	h = sel(enum.IPredUGE, a, c(0x47800000), c(0x7c00), h)
	h = b.NewOr(sign, h)
	h = sel(enum.IPredUGT, a, c(0x7f800000), c(rng.F16NaN), h)
	return b.NewTrunc(h, w.vec(i16))
}

// widenF16 is the floats of the float16 bits h (w lanes of i16), exactly,
// as rng.F16Widen: a subnormal through an exact conversion and scaling.
func widenF16(b *llvm.Block, w lanes, h value.Value) value.Value {
	c := w.u32
	h32 := b.NewZExt(h, w.i32())
	sign, e, m := b.NewShl(b.NewAnd(h32, c(0x8000)), c(16)), b.NewAnd(b.NewLShr(h32, c(10)), c(0x1f)), b.NewAnd(h32, c(0x3ff))
	normal := b.NewOr(sign, b.NewOr(b.NewShl(b.NewAdd(e, c(112)), c(23)), b.NewShl(m, c(13))))
	special := b.NewOr(sign, b.NewOr(c(0x7f800000), b.NewShl(m, c(13))))
	scaled := b.NewFMul(b.NewUIToFP(m, w.f32()), w.f(1.0/(1<<24)))
	subnormal := b.NewOr(b.NewBitCast(scaled, w.i32()), sign)
	bitsOf := b.NewSelect(b.NewICmp(enum.IPredEQ, e, c(31)), special, normal)
	bitsOf = b.NewSelect(b.NewICmp(enum.IPredEQ, e, c(0)), subnormal, bitsOf)
	return b.NewBitCast(bitsOf, w.f32())
}

// rounding is where a step's stochastic rounding bits come from: Philox
// under the launch's seed and step, whatever its noise mode, on the
// global index offset + i (rng.RoundingBits).
type rounding struct {
	seed, step, offset value.Value
}

// roundingWords is fg_rounding_words(seed, step, site, group) <4 x i32>:
// the Philox words of the group of four elements at the rounding site,
// emitted on first use so that a module without stochastic rounding is
// unchanged.
func (k *kernel) roundingWords() *llvm.Func {
	const name = "fg_rounding_words"
	if f := funcNamed(k.m, name); f != nil {
		return f
	}
	ps := noiseParams("group")
	f, b := newHelper(k.m, name, types.NewVector(4, i32), ps...)
	x := philoxCall(b, funcNamed(k.m, "fg_philox"), ps[0], ps[1], ps[2], ps[3])
	out := make([]value.Value, 4)
	for j := range out {
		out[j] = b.NewExtractValue(x, uint64(j))
	}
	b.NewRet(packLanes(b, out))
	return f
}

// roundingWordsC is fg_rounding_c<w>(seed, step, site, group), emitted on
// first use: the Philox words of the w groups of four from group at the
// rounding site, drawn on w lanes at once and transposed to coordinate
// order as the noise's (transposeGroups): element v, lane l is the word
// of coordinate w·v+l of the 4w.
func (k *kernel) roundingWordsC(w lanes) *llvm.Func {
	name := "fg_rounding_c" + w.suffix()[2:]
	if f := funcNamed(k.m, name); f != nil {
		return f
	}
	ps := noiseParams("group")
	out := types.NewArray(4, w.i32())
	f, b := newHelper(k.m, name, out, ps...)
	groups := w.from(b, ps[3])
	lo := func(x value.Value) value.Value { return b.NewTrunc(x, i32) }
	x := b.NewCall(funcNamed(k.m, "fg_philox"+w.suffix()), b.NewTrunc(groups, w.i32()), b.NewTrunc(b.NewLShr(groups, w.u64(32)), w.i32()),
		w.splat(b, ps[1]), w.splat(b, ps[2]), lo(ps[0]), lo(b.NewLShr(ps[0], i64c(32))))
	var res value.Value = constantUndef(out)
	transposeGroups(b, w, x, func(v int, y value.Value) { res = b.NewInsertValue(res, y, uint64(v)) })
	b.NewRet(res)
	return f
}

// roundingSites are the distinct Philox sites of the stochastic stored
// buffers (rng.RoundingSiteBase + buffer/2: two buffers share a word), in
// store order; none without stochastic rounding.
func (k *kernel) roundingSites() []uint32 {
	var out []uint32
	for _, name := range k.stored {
		buf := k.bufferIndex(name)
		if site := roundingSite(buf); k.storage(buf).Stochastic && !slices.Contains(out, site) {
			out = append(out, site)
		}
	}
	return out
}

// roundingSite is buffer buf's Philox site.
func roundingSite(buf int) uint32 { return rng.RoundingSiteBase + uint32(buf)/2 }

// half is buffer buf's 16 bits of the words x (w lanes), in the low half
// of each lane: the low half for an even buf.
func half(b *llvm.Block, x value.Value, buf int, w lanes) value.Value {
	return b.NewLShr(x, w.u32(16*(uint32(buf)&1)))
}

// wideBits draws the rounding words of the 4w coordinates from index base
// (offset+base a multiple of four), once a site: by site, the words of the
// four vectors of w (vectorBits).
func (k *kernel) wideBits(b *llvm.Block, r rounding, base value.Value, w lanes) map[uint32]value.Value {
	out := map[uint32]value.Value{}
	for _, site := range k.roundingSites() {
		group := b.NewLShr(b.NewAdd(r.offset, base), i64c(2))
		out[site] = b.NewCall(k.roundingWordsC(w), r.seed, r.step, i32c(site), group)
	}
	return out
}

// vectorBits is buffer buf's rounding bits for vector v of words (wideBits);
// nil where buf rounds to nearest.
func (k *kernel) vectorBits(b *llvm.Block, words map[uint32]value.Value, buf, v int, w lanes) value.Value {
	if !k.storage(buf).Stochastic {
		return nil
	}
	return half(b, b.NewExtractValue(words[roundingSite(buf)], uint64(v)), buf, w)
}

// groupWords draws the rounding words of the n coordinates from index base
// (offset+base a multiple of four), once a site: by site, one <4 x i32>
// a four (quadBits, laneBits).
func (k *kernel) groupWords(b *llvm.Block, r rounding, base value.Value, n int) map[uint32][]value.Value {
	out := map[uint32][]value.Value{}
	for _, site := range k.roundingSites() {
		first := b.NewLShr(b.NewAdd(r.offset, base), i64c(2))
		for q := range int64(n / 4) {
			out[site] = append(out[site], b.NewCall(k.roundingWords(), r.seed, r.step, i32c(site), b.NewAdd(first, i64c(q))))
		}
	}
	return out
}

// quadBits is buffer buf's rounding bits of the four coordinates q of a
// group's words; nil where buf rounds to nearest.
func (k *kernel) quadBits(b *llvm.Block, words map[uint32][]value.Value, buf, q int) value.Value {
	if !k.storage(buf).Stochastic {
		return nil
	}
	return half(b, words[roundingSite(buf)][q], buf, 4)
}

// laneBits is buffer buf's rounding bits of coordinate l of a group's
// words; nil where buf rounds to nearest.
func (k *kernel) laneBits(b *llvm.Block, words map[uint32][]value.Value, buf, l int) value.Value {
	if !k.storage(buf).Stochastic {
		return nil
	}
	return half(b, b.NewExtractElement(words[roundingSite(buf)][l/4], i32c(uint32(l%4))), buf, 1)
}

// elementBits is buffer buf's rounding bits of the coordinate at index i
// (a head or tail element, drawn alone); nil where buf rounds to nearest.
func (k *kernel) elementBits(b *llvm.Block, r rounding, buf int, i value.Value) value.Value {
	if !k.storage(buf).Stochastic {
		return nil
	}
	e := b.NewAdd(r.offset, i)
	words := b.NewCall(k.roundingWords(), r.seed, r.step, i32c(roundingSite(buf)), b.NewLShr(e, i64c(2)))
	return half(b, selectByBits(b, unpackLanes(b, words, 4), e), buf, 1)
}

// storages are the storage of each buffer named; nil where all are
// float32, so that a reduction over float32 buffers is emitted as before.
func (k *kernel) storages(names []string) []ir.Storage {
	out := make([]ir.Storage, len(names))
	narrow := false
	for i, name := range names {
		out[i] = k.fn.StorageOf(name)
		narrow = narrow || out[i].Narrow()
	}
	if !narrow {
		return nil
	}
	return out
}

// float32Storage is the storage of the rows the reductions read.
var float32Storage = ir.Storage{DType: lang.Float32}
