package cuda

import (
	"github.com/llir/llvm/ir"
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
	pair   = types.NewStruct(types.Float, types.Float)
)

func f32c(x float32) *constant.Float { return constant.NewFloat(f32, float64(x)) }
func i32c(x uint32) *constant.Int    { return constant.NewInt(i32, int64(int32(x))) }
func i64c(x int64) *constant.Int     { return constant.NewInt(i64, x) }

// newHelper adds an internal, always-inlined function to m and returns it
// with its entry block.
func newHelper(m *ir.Module, name string, ret types.Type, params ...*ir.Param) (*ir.Func, *ir.Block) {
	f := m.NewFunc(name, ret, params...)
	f.Linkage = enum.LinkageInternal
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrAlwaysInline, enum.FuncAttrNoUnwind)
	return f, f.NewBlock("entry")
}

// bitFlip applies op (xor: negate, and: absolute value) with mask to the bits
// of x. Integer operations on the sign bit are exact on every target, where
// fneg and fabs may canonicalize a NaN.
func bitFlip(b *ir.Block, x value.Value, abs bool) value.Value {
	bits := b.NewBitCast(x, i32)
	var out value.Value
	if abs {
		out = b.NewAnd(bits, i32c(0x7fffffff))
	} else {
		out = b.NewXor(bits, i32c(0x80000000))
	}
	return b.NewBitCast(out, f32)
}

// selectMinMax is the DSL's min or max (dsl.Max): NaN if a is NaN, else b if
// b is NaN or b >= a (max) / b <= a (min), else a.
func selectMinMax(b *ir.Block, a, c value.Value, isMax bool) value.Value {
	pred := enum.FPredUGE
	if !isMax {
		pred = enum.FPredULE
	}
	pick := b.NewSelect(b.NewFCmp(pred, c, a), c, a)
	return b.NewSelect(b.NewFCmp(enum.FPredUNO, a, a), a, pick)
}

func constantUndef(t types.Type) value.Value { return constant.NewUndef(t) }

// intrinsic returns the declaration of an LLVM intrinsic in m, adding it on
// first use.
func intrinsic(m *ir.Module, name string, ret types.Type, params ...types.Type) *ir.Func {
	for _, f := range m.Funcs {
		if f.Name() == name {
			return f
		}
	}
	var ps []*ir.Param
	for _, p := range params {
		ps = append(ps, ir.NewParam("", p))
	}
	return m.NewFunc(name, ret, ps...)
}

// sqrtF32 is llvm.sqrt.f32: IEEE square root (sqrt.rn.f32 on NVPTX, sqrtss on x86).
func sqrtF32(m *ir.Module) *ir.Func { return intrinsic(m, "llvm.sqrt.f32", f32, f32) }

func constantTrue() value.Value { return constant.NewBool(true) }
