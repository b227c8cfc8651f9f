package llvmgen

import (
	"fmt"

	"github.com/fibergen/fibergen/ir"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// The LLVM types the kernels use.
var (
	f32    = types.Float
	i1     = types.I1
	i32    = types.I32
	i64    = types.I64
	f32Ptr = types.NewPointer(types.Float)
	vec4   = types.NewVector(4, types.Float)
	vecPtr = types.NewPointer(vec4)
)

func f32c(x float32) *constant.Float { return constant.NewFloat(f32, float64(x)) }
func i32c(x uint32) *constant.Int    { return constant.NewInt(i32, int64(int32(x))) }
func i64c(x int64) *constant.Int     { return constant.NewInt(i64, x) }

// newHelper adds an internal, always-inlined function to m and returns it
// with its entry block.
func newHelper(m *llvm.Module, name string, ret types.Type, params ...*llvm.Param) (*llvm.Func, *llvm.Block) {
	f := m.NewFunc(name, ret, params...)
	f.Linkage = enum.LinkageInternal
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrAlwaysInline, enum.FuncAttrNoUnwind)
	return f, f.NewBlock("entry")
}

// bitFlip negates x (abs false: xor of the sign bit) or takes its absolute
// value (abs true: the sign bit cleared), x a float or w lanes of floats.
// Integer operations on the sign bit are exact on every target, where fneg
// and fabs may canonicalize a NaN.
func bitFlip(b *llvm.Block, w lanes, x value.Value, abs bool) value.Value {
	bits := b.NewBitCast(x, w.i32())
	var out value.Value
	if abs {
		out = b.NewAnd(bits, w.u32(0x7fffffff))
	} else {
		out = b.NewXor(bits, w.u32(0x80000000))
	}
	return b.NewBitCast(out, w.f32())
}

// selectMinMax is the DSL's min or max (lang.MaxOf): NaN if a is NaN, else b if
// b is NaN or b >= a (max) / b <= a (min), else a.
func selectMinMax(b *llvm.Block, a, c value.Value, isMax bool) value.Value {
	pred := enum.FPredUGE
	if !isMax {
		pred = enum.FPredULE
	}
	pick := b.NewSelect(b.NewFCmp(pred, c, a), c, a)
	return b.NewSelect(b.NewFCmp(enum.FPredUNO, a, a), a, pick)
}

// selectSign is the DSL's sign (lang.SignOf): 1 if x > 0, -1 if x < 0,
// else x itself (±0, and a NaN with its bits), x a float or w lanes of
// floats: two ordered comparisons and two selects, exact on every target.
func selectSign(b *llvm.Block, w lanes, x value.Value) value.Value {
	zero := w.f(0)
	neg := b.NewSelect(b.NewFCmp(enum.FPredOLT, x, zero), w.f(-1), x)
	return b.NewSelect(b.NewFCmp(enum.FPredOGT, x, zero), w.f(1), neg)
}

// comparePreds are the LLVM predicates of the comparisons (lang.Lt, …):
// ordered, so false where an operand is NaN, but != unordered, true there.
var comparePreds = map[ir.Op]enum.FPred{ir.OpEq: enum.FPredOEQ, ir.OpLt: enum.FPredOLT, ir.OpLe: enum.FPredOLE,
	ir.OpGt: enum.FPredOGT, ir.OpGe: enum.FPredOGE, ir.OpNe: enum.FPredUNE}

// compare is a comparison's 1 or 0.
func compare(b *llvm.Block, w lanes, op ir.Op, x, y value.Value) value.Value {
	return b.NewSelect(b.NewFCmp(comparePreds[op], x, y), w.f(1), w.f(0))
}

// selectIf is the DSL's select (lang.SelectOf): x where c != 0, else y.
func selectIf(b *llvm.Block, w lanes, c, x, y value.Value) value.Value {
	return b.NewSelect(b.NewFCmp(enum.FPredUNE, c, w.f(0)), x, y)
}

func constantUndef(t types.Type) value.Value { return constant.NewUndef(t) }

// intrinsic returns the declaration of an LLVM intrinsic in m, adding it on
// first use.
func intrinsic(m *llvm.Module, name string, ret types.Type, params ...types.Type) *llvm.Func {
	if f := funcNamed(m, name); f != nil {
		return f
	}
	var ps []*llvm.Param
	for _, p := range params {
		ps = append(ps, llvm.NewParam("", p))
	}
	return m.NewFunc(name, ret, ps...)
}

// funcNamed is the function of m named name, or nil.
func funcNamed(m *llvm.Module, name string) *llvm.Func {
	for _, f := range m.Funcs {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// sqrtF32 is llvm.sqrt.f32: IEEE square root (sqrt.rn.f32 on NVPTX, sqrtss on x86).
func sqrtF32(m *llvm.Module) *llvm.Func { return intrinsic(m, "llvm.sqrt.f32", f32, f32) }

func constantTrue() value.Value { return constant.NewBool(true) }

// lanes is the width of a SIMD noise function: 1 for scalar code, else the
// number of lanes of its vectors.
type lanes int

func (w lanes) vec(t types.Type) types.Type {
	if w == 1 {
		return t
	}
	return types.NewVector(uint64(w), t)
}

func (w lanes) i32() types.Type { return w.vec(i32) }
func (w lanes) i64() types.Type { return w.vec(i64) }
func (w lanes) f32() types.Type { return w.vec(f32) }

// suffix names a width's functions: "" for scalars, "_v4" for four lanes.
func (w lanes) suffix() string {
	if w == 1 {
		return ""
	}
	return fmt.Sprintf("_v%d", w)
}

// konst is c in every lane.
func (w lanes) konst(c constant.Constant) value.Value {
	if w == 1 {
		return c
	}
	elems := make([]constant.Constant, w)
	for i := range elems {
		elems[i] = c
	}
	return constant.NewVector(types.NewVector(uint64(w), c.Type()), elems...)
}

func (w lanes) u32(x uint32) value.Value { return w.konst(i32c(x)) }
func (w lanes) u64(x int64) value.Value  { return w.konst(i64c(x)) }
func (w lanes) f(x float32) value.Value  { return w.konst(f32c(x)) }

// packLanes puts the scalars xs in the lanes of a vector, in order.
func packLanes(b *llvm.Block, xs []value.Value) value.Value {
	var v value.Value = constantUndef(lanes(len(xs)).vec(xs[0].Type()))
	for i, x := range xs {
		v = b.NewInsertElement(v, x, i32c(uint32(i)))
	}
	return v
}

// unpackLanes is the w lanes of the vector x, in order.
func unpackLanes(b *llvm.Block, x value.Value, w lanes) []value.Value {
	out := make([]value.Value, w)
	for i := range out {
		out[i] = b.NewExtractElement(x, i32c(uint32(i)))
	}
	return out
}

// splat puts the scalar x in every lane.
func (w lanes) splat(b *llvm.Block, x value.Value) value.Value {
	if w == 1 {
		return x
	}
	var v value.Value = constantUndef(w.vec(x.Type()))
	for i := 0; i < int(w); i++ {
		v = b.NewInsertElement(v, x, i32c(uint32(i)))
	}
	return v
}

// from is the i64 x, x+1, ..., x+w-1 in the w lanes: the indexes of the
// blocks a SIMD noise function draws, one a lane.
func (w lanes) from(b *llvm.Block, x value.Value) value.Value {
	iota := make([]constant.Constant, w)
	for j := range iota {
		iota[j] = i64c(int64(j))
	}
	return b.NewAdd(w.splat(b, x), constant.NewVector(w.i64().(*types.VectorType), iota...))
}

// sqrt is llvm.sqrt of the width's float type: IEEE square root per lane.
func (w lanes) sqrt(m *llvm.Module) *llvm.Func {
	if w == 1 {
		return sqrtF32(m)
	}
	return intrinsic(m, fmt.Sprintf("llvm.sqrt.v%df32", w), w.f32(), w.f32())
}
