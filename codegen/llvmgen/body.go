package llvmgen

import (
	"fmt"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/fibergen/fibergen/ir"
)

// emitBody emits <name>_body: the per-coordinate step, once. Its parameters
// are the value of every buffer before the step (g privatized already), then
// the host scalars; it returns the value of every stored buffer after it.
func (k *kernel) emitBody() error {
	var params []*llvm.Param
	for _, b := range k.Buffers {
		params = append(params, llvm.NewParam("v."+b.Name, f32))
	}
	for i := range k.scalars {
		params = append(params, llvm.NewParam(fmt.Sprintf("s.%d", i), f32))
	}
	var fields []types.Type
	for range k.stored {
		fields = append(fields, f32)
	}
	// A named type: every insertvalue and extractvalue names it instead of
	// spelling out one field per stored buffer, so that the module's text
	// grows linearly with the states, not with their square.
	stored := k.m.NewTypeDef(k.Name+".stored", types.NewStruct(fields...))
	f, b := newHelper(k.m, k.Name+"_body", stored, params...)
	k.body = f
	vals := map[*ir.Value]value.Value{}
	for i, s := range k.scalars {
		vals[s] = params[len(k.Buffers)+i]
	}
	var out value.Value = constantUndef(f.Sig.RetType)
	for _, v := range k.fn.Step.Values {
		if v.Uniform && v.Op != ir.OpStore {
			continue
		}
		if v.Op == ir.OpStore {
			out = b.NewInsertValue(out, operand(vals, v.Args[0]), uint64(k.storeIndex(v.Name)))
			continue
		}
		x, err := k.instr(b, v, vals, params)
		if err != nil {
			return err
		}
		vals[v] = x
	}
	b.NewRet(out)
	return nil
}

// operand is the LLVM value of an IR operand: an immediate for a constant.
func operand(vals map[*ir.Value]value.Value, v *ir.Value) value.Value {
	if v.IsConst() {
		return f32c(float32(v.Const))
	}
	return vals[v]
}

// instr emits the per-coordinate value v.
func (k *kernel) instr(b *llvm.Block, v *ir.Value, vals map[*ir.Value]value.Value, params []*llvm.Param) (value.Value, error) {
	if v.Type != ir.F32 {
		return nil, fmt.Errorf("llvmgen: %s: per-coordinate value v%d (%s) is %s, not f32", k.Name, v.ID, v.Op, v.Type)
	}
	arg := func(i int) value.Value { return operand(vals, v.Args[i]) }
	switch v.Op {
	case ir.OpLoad:
		return params[k.bufferIndex(v.Name)], nil
	case ir.OpAdd:
		return b.NewFAdd(arg(0), arg(1)), nil
	case ir.OpSub:
		return b.NewFSub(arg(0), arg(1)), nil
	case ir.OpMul:
		return b.NewFMul(arg(0), arg(1)), nil
	case ir.OpDiv:
		return b.NewFDiv(arg(0), arg(1)), nil
	case ir.OpNeg:
		return bitFlip(b, 1, arg(0), false), nil
	case ir.OpAbs:
		return bitFlip(b, 1, arg(0), true), nil
	case ir.OpSqrt:
		return b.NewCall(sqrtF32(k.m), arg(0)), nil
	case ir.OpMin, ir.OpMax:
		return selectMinMax(b, arg(0), arg(1), v.Op == ir.OpMax), nil
	case ir.OpSign:
		return selectSign(b, 1, arg(0)), nil
	case ir.OpEq, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpNe:
		return compare(b, 1, v.Op, arg(0), arg(1)), nil
	case ir.OpSelect:
		return selectIf(b, 1, arg(0), arg(1), arg(2)), nil
	}
	return nil, fmt.Errorf("llvmgen: %s: no kernel code for %s", k.Name, v.Op)
}
