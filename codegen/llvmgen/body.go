package llvmgen

import (
	"fmt"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/fibergen/fibergen/ir"
)

// emitBodies emits <name>_body, the per-coordinate step, and, for every
// width w of the host's wide loops, <name>_body_v<w>: the same operations
// on w lanes, so the same bits lane by lane (docs/kernels.md). The wide
// loops call the vector body once a vector, not the scalar body once a
// lane: the same machine code after SLP (decision 113), and a sixteenth
// of the code for opt and llc to work through.
func (k *kernel) emitBodies() error {
	k.bodies = map[lanes]*llvm.Func{}
	for _, w := range append([]lanes{1}, hostWidths()...) {
		f, err := k.emitBody(w)
		if err != nil {
			return err
		}
		k.bodies[w] = f
	}
	return nil
}

// emitBody emits the body on w lanes. Its parameters are the value of every
// buffer before the step (g privatized already), then the host scalars (one
// float each, the same in every lane); it returns the value of every stored
// buffer after it.
func (k *kernel) emitBody(w lanes) (*llvm.Func, error) {
	var params []*llvm.Param
	for _, b := range k.Buffers {
		params = append(params, llvm.NewParam("v."+b.Name, w.f32()))
	}
	for i := range k.scalars {
		params = append(params, llvm.NewParam(fmt.Sprintf("s.%d", i), f32))
	}
	f, b := newHelper(k.m, k.Name+"_body"+w.suffix(), k.storedType(w), params...)
	e := bodyEmitter{k: k, w: w, b: b, params: params, vals: map[*ir.Value]value.Value{}}
	for i, s := range k.scalars {
		e.vals[s] = w.splat(b, params[len(k.Buffers)+i])
	}
	var out value.Value = constantUndef(f.Sig.RetType)
	for _, v := range k.fn.Step.Values {
		if v.Uniform && v.Op != ir.OpStore {
			continue
		}
		if v.Op == ir.OpStore {
			out = b.NewInsertValue(out, e.operand(v.Args[0]), uint64(k.storeIndex(v.Name)))
			continue
		}
		x, err := e.instr(v)
		if err != nil {
			return nil, err
		}
		e.vals[v] = x
	}
	b.NewRet(out)
	return f, nil
}

// storedType is the named struct of the stored buffers' values on w lanes:
// every insertvalue and extractvalue names it instead of spelling out one
// field per stored buffer, so that the module's text grows linearly with
// the states, not with their square.
func (k *kernel) storedType(w lanes) types.Type {
	fields := make([]types.Type, len(k.stored))
	for i := range fields {
		fields[i] = w.f32()
	}
	return k.m.NewTypeDef(k.Name+".stored"+w.suffix(), types.NewStruct(fields...))
}

// bodyEmitter emits a body's instructions on w lanes into b.
type bodyEmitter struct {
	k      *kernel
	w      lanes
	b      *llvm.Block
	params []*llvm.Param
	vals   map[*ir.Value]value.Value
}

// operand is the LLVM value of an IR operand: an immediate for a constant.
func (e *bodyEmitter) operand(v *ir.Value) value.Value {
	if v.IsConst() {
		return e.w.f(float32(v.Const))
	}
	return e.vals[v]
}

// instr emits the per-coordinate value v.
func (e *bodyEmitter) instr(v *ir.Value) (value.Value, error) {
	k, b, w := e.k, e.b, e.w
	if v.Type != ir.F32 {
		return nil, fmt.Errorf("llvmgen: %s: per-coordinate value v%d (%s) is %s, not f32", k.Name, v.ID, v.Op, v.Type)
	}
	arg := func(i int) value.Value { return e.operand(v.Args[i]) }
	switch v.Op {
	case ir.OpLoad:
		return e.params[k.bufferIndex(v.Name)], nil
	case ir.OpAdd:
		return b.NewFAdd(arg(0), arg(1)), nil
	case ir.OpSub:
		return b.NewFSub(arg(0), arg(1)), nil
	case ir.OpMul:
		return b.NewFMul(arg(0), arg(1)), nil
	case ir.OpDiv:
		return b.NewFDiv(arg(0), arg(1)), nil
	case ir.OpNeg:
		return bitFlip(b, w, arg(0), false), nil
	case ir.OpAbs:
		return bitFlip(b, w, arg(0), true), nil
	case ir.OpSqrt:
		return b.NewCall(w.sqrt(k.m), arg(0)), nil
	case ir.OpMin, ir.OpMax:
		return selectMinMax(b, arg(0), arg(1), v.Op == ir.OpMax), nil
	case ir.OpSign:
		return selectSign(b, w, arg(0)), nil
	case ir.OpEq, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpNe:
		return compare(b, w, v.Op, arg(0), arg(1)), nil
	case ir.OpSelect:
		return selectIf(b, w, arg(0), arg(1), arg(2)), nil
	}
	return nil, fmt.Errorf("llvmgen: %s: no kernel code for %s", k.Name, v.Op)
}
