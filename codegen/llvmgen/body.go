package llvmgen

import (
	"fmt"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/rng"
)

// emitBodies emits <name>_body, the per-coordinate step, and, for every
// width w of the host's wide loops, <name>_body_v<w>: the same operations
// on w lanes, so the same bits lane by lane (docs/kernels.md). The wide
// loops call the vector body once a vector, not the scalar body once a
// lane: the same machine code after SLP (decision 113), and a sixteenth
// of the code for opt and llc to work through. The step of a noise block
// privatizes g itself, in the launch's noise scheme: it has a body per
// scheme (bodyKey).
func (k *kernel) emitBodies() error {
	k.bodies, k.stores = map[bodyKey]*llvm.Func{}, map[lanes]types.Type{}
	modes := []rng.Mode{rng.Off}
	if k.fn.Noise != nil {
		modes = append(modes, rng.Philox, rng.Secure)
	}
	for _, mode := range modes {
		for _, w := range append([]lanes{1}, hostWidths()...) {
			f, err := k.emitBody(bodyKey{w, mode})
			if err != nil {
				return err
			}
			k.bodies[bodyKey{w, mode}] = f
		}
	}
	return nil
}

// bodyKey names a body: its lanes, and the noise scheme in which the step
// of a noise block privatizes g (rng.Off for every body without one).
type bodyKey struct {
	w    lanes
	mode rng.Mode
}

// name is the body's symbol.
func (key bodyKey) name(opt string) string {
	scheme := map[rng.Mode]string{rng.Philox: "_philox", rng.Secure: "_secure"}[key.mode]
	return opt + "_body" + scheme + key.w.suffix()
}

// emitBody emits the body on w lanes. Its parameters are the value of every
// buffer before the step (g privatized already, but for a noise block),
// then the host scalars (one float each, the same in every lane), and for
// a noise block z, σ_w and the secure grid γ and 1/γ; it returns the value
// of every stored buffer after it.
func (k *kernel) emitBody(key bodyKey) (*llvm.Func, error) {
	w := key.w
	var params []*llvm.Param
	for _, b := range k.Buffers {
		params = append(params, llvm.NewParam("v."+b.Name, w.f32()))
	}
	for i := range k.scalars {
		params = append(params, llvm.NewParam(fmt.Sprintf("s.%d", i), f32))
	}
	if k.fn.Noise != nil {
		params = append(params, llvm.NewParam("z", w.f32()), llvm.NewParam("sigma", f32), llvm.NewParam("gamma", f32), llvm.NewParam("inv", f32))
	}
	if key.mode == rng.Off {
		k.stores[w] = k.storedType(w)
	}
	f, b := newHelper(k.m, key.name(k.Name), k.stores[w], params...)
	e := bodyEmitter{k: k, w: w, b: b, params: params, vals: map[*ir.Value]value.Value{}}
	for i, s := range k.scalars {
		e.vals[s] = w.splat(b, params[len(k.Buffers)+i])
	}
	e.privatize(key.mode)
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

// privatize sets what OpPrivatize adds in scheme mode: σ_w·w from the
// body's parameters (snapped when secure), or nothing without noise.
func (e *bodyEmitter) privatize(mode rng.Mode) {
	if e.k.fn.Noise == nil || mode == rng.Off {
		return
	}
	n := len(e.params)
	e.noise = &draw{sigma: e.params[n-3]}
	if mode == rng.Secure {
		e.noise.gamma, e.noise.inv = e.params[n-2], e.params[n-1]
	}
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
	noise  *draw // what OpPrivatize adds: nil, none (Off)
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
	case ir.OpDraw:
		return e.params[len(e.params)-4], nil
	case ir.OpPrivatize:
		if e.noise == nil {
			return arg(0), nil
		}
		return e.noise.add(b, w, arg(0), arg(1)), nil
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
