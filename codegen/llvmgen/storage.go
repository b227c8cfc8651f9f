package llvmgen

import (
	"fmt"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file is the buffers' storage in the step's loops (ir.Storage,
// docs/kernels.md "Storage types"): a bfloat16 buffer is an array of i16;
// a load widens it exactly (the bits shifted up), a store narrows with
// integer operations that compute rng.BF16Nearest's and rng.BF16Stochastic's
// bits on every target — no bf16 instruction, so the same code runs on
// every host variant and every PTX target (cvt.rn.bf16.f32 needs sm_80 and
// would give a NaN other bits).

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
	if !s.Narrow() {
		return x
	}
	return b.NewBitCast(b.NewShl(b.NewZExt(x, w.i32()), w.u32(16)), w.f32())
}

// storeStored stores the w floats x at index idx of p, narrowed to s:
// stochastically by the low 16 bits of bits (w lanes of i32) where s says
// so. align is as loadStored's.
func storeStored(b *llvm.Block, s ir.Storage, p, idx, x value.Value, w lanes, align int, bits value.Value) {
	if s.Narrow() {
		x = narrowBF16(b, w, x, bits)
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

// bits is the rounding bits of buffer buf for the w coordinates from
// index base+c of the buffers (w 1, or a multiple of four with offset+base+c
// a multiple of four), in the low 16 bits of each lane; nil, and no
// instruction, where buffer buf rounds to nearest.
func (k *kernel) bits(b *llvm.Block, r rounding, buf int, base value.Value, c int64, w lanes) value.Value {
	if !k.storage(buf).Stochastic {
		return nil
	}
	site := i32c(rng.RoundingSiteBase + uint32(buf)/2)
	e := b.NewAdd(r.offset, b.NewAdd(base, i64c(c)))
	words := func(g value.Value) value.Value { return b.NewCall(k.roundingWords(), r.seed, r.step, site, g) }
	var v value.Value
	if w == 1 {
		v = selectByBits(b, unpackLanes(b, words(b.NewLShr(e, i64c(2))), 4), e)
	} else {
		var parts []value.Value
		for q := int64(0); q < int64(w)/4; q++ {
			parts = append(parts, unpackLanes(b, words(b.NewAdd(b.NewLShr(e, i64c(2)), i64c(q))), 4)...)
		}
		v = packLanes(b, parts)
	}
	return b.NewLShr(v, w.u32(16*(uint32(buf)&1)))
}

// checkNarrowReads refuses a diagnostic or a reduction that reads a
// bfloat16 state: their passes load float32 rows only, for now.
func checkNarrowReads(fn *ir.Func) error {
	reads := map[string][]string{}
	for _, d := range fn.Diags {
		reads["diagnostic "+d.Kind] = d.Reads(fn)
	}
	if fn.Reduce != nil {
		reads["the reductions (norm, sum, mean, max, min)"] = fn.ReduceReads()
	}
	for what, states := range reads {
		for _, s := range states {
			if st := fn.StorageOf(s); st.Narrow() {
				return fmt.Errorf("llvmgen: %s: %s reads state %s, stored as %s: the passes of the diagnostics and reductions read float32 buffers only, so far; store %s as f32", fn.Name, what, s, st.DType, s)
			}
		}
	}
	return nil
}

// float32Storage is the storage of the rows the reductions read.
var float32Storage = ir.Storage{DType: lang.Float32}
