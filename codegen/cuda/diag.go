package cuda

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	fir "github.com/fibergen/fibergen/ir"
)

// This file emits the diagnostics' entry points (docs/kernels.md,
// "Diagnostics"): for each declared diagnostic KIND an NVPTX kernel
// <name>_KIND and a host function <name>_KIND_cpu (with its AVX2 twin)
// that compute the chunk partials of the diagnostic's sums from the states
// after a step, in the order of reduce.go. They take the step's buffers and
// scalars as the step entry points do, and read only the states they need.

// DiagKernel is the NVPTX kernel of a diagnostic, e.g. fiber_clamp_mass.
func (k *Kernels) DiagKernel(kind string) string { return k.Name + "_" + kind }

// DiagHostFunc is the host function of a diagnostic, e.g. fiber_clamp_mass_cpu.
func (k *Kernels) DiagHostFunc(kind string) string { return k.DiagKernel(kind) + "_cpu" }

// emitDiagnostics emits the entry points of every declared diagnostic.
func (k *kernel) emitDiagnostics() error {
	for _, d := range k.fn.Diags {
		idx, err := d.ScalarIndexes(k.fn)
		if err != nil {
			return fmt.Errorf("cuda: %s: %v", k.Name, err)
		}
		k.Diagnostics = append(k.Diagnostics, d.Kind)
		k.emitDiagKernel(d, idx)
		k.emitDiagHost(d, idx)
	}
	return nil
}

// diagReduction is the reduction of d's terms: the inputs are the states d
// reads, the sums num and den; scalars are the step's scalar values.
func (k *kernel) diagReduction(d *fir.Diagnostic, idx []int, scalars []value.Value) reduction {
	reads := d.Reads(k.fn)
	return reduction{inputs: len(reads), sums: len(fir.DiagTerms),
		terms: func(b *ir.Block, w lanes, in []value.Value) []value.Value {
			return k.diagTerms(b, w, d, in, reads, idx, scalars)
		}}
}

// diagTerms emits d's block on w lanes of coordinates whose states are in
// (in the order of reads) and returns the stored terms, num then den.
func (k *kernel) diagTerms(b *ir.Block, w lanes, d *fir.Diagnostic, in []value.Value, reads []string, idx []int, scalars []value.Value) []value.Value {
	vals := map[*fir.Value]value.Value{}
	for i, v := range fir.HostScalars(d.Block) {
		vals[v] = broadcast(b, w, scalars[idx[i]])
	}
	out := make([]value.Value, len(fir.DiagTerms))
	for _, v := range d.Block.Values {
		switch {
		case v.Op == fir.OpStore:
			out[slices.Index(fir.DiagTerms, v.Name)] = k.lanesOperand(w, vals, v.Args[0])
		case v.Op == fir.OpLoad:
			vals[v] = in[slices.Index(reads, v.Name)]
		case !v.Uniform:
			vals[v] = k.lanesInstr(b, w, v, vals)
		}
	}
	return out
}

// lanesOperand is the value of operand v on w lanes: a constant in every lane.
func (k *kernel) lanesOperand(w lanes, vals map[*fir.Value]value.Value, v *fir.Value) value.Value {
	if v.IsConst() {
		return w.f(float32(v.Const))
	}
	return vals[v]
}

// lanesInstr emits the per-coordinate value v on w lanes, with the
// operations of instr.
func (k *kernel) lanesInstr(b *ir.Block, w lanes, v *fir.Value, vals map[*fir.Value]value.Value) value.Value {
	arg := func(i int) value.Value { return k.lanesOperand(w, vals, v.Args[i]) }
	switch v.Op {
	case fir.OpAdd:
		return b.NewFAdd(arg(0), arg(1))
	case fir.OpSub:
		return b.NewFSub(arg(0), arg(1))
	case fir.OpMul:
		return b.NewFMul(arg(0), arg(1))
	case fir.OpDiv:
		return b.NewFDiv(arg(0), arg(1))
	case fir.OpNeg, fir.OpAbs:
		return bitFlip(b, w, arg(0), v.Op == fir.OpAbs)
	case fir.OpSqrt:
		return b.NewCall(w.sqrt(k.m), arg(0))
	case fir.OpMin, fir.OpMax:
		return selectMinMax(b, arg(0), arg(1), v.Op == fir.OpMax)
	case fir.OpEq:
		return b.NewSelect(b.NewFCmp(enum.FPredOEQ, arg(0), arg(1)), w.f(1), w.f(0))
	}
	return w.f(0) // ir.Verify admits no other per-coordinate op
}

// emitDiagKernel emits the NVPTX kernel
//
//	<name>_KIND(float *buffers..., float scalars..., float sigma_w, i64 n, float *num, float *den)
//
// whose warps take the chunks of the n coordinates in turn (warpReduce);
// its buffers and scalars are the step kernel's.
func (k *kernel) emitDiagKernel(d *fir.Diagnostic, idx []int) {
	var params []*ir.Param
	var ptrs, scalars []value.Value
	for _, buf := range k.Buffers {
		p := ir.NewParam("p."+buf.Name, f32Ptr)
		p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias, enum.ParamAttrReadOnly)
		params, ptrs = append(params, p), append(ptrs, p)
	}
	for i := range k.Scalars {
		p := ir.NewParam(fmt.Sprintf("s.%d", i), f32)
		params, scalars = append(params, p), append(scalars, p)
	}
	n, num, den := ir.NewParam("n", i64), ir.NewParam("num", f32Ptr), ir.NewParam("den", f32Ptr)
	params = append(params, n, num, den)
	f := k.m.NewFunc(k.DiagKernel(d.Kind), types.Void, params...)
	f.CallingConv = enum.CallingConvPTXKernel
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
	b := f.NewBlock("entry")
	r := k.diagReduction(d, idx, scalars)
	done := k.warpReduce(f, b, r, k.readPtrs(d, ptrs), []value.Value{num, den}, i64c(1), n)
	done.NewRet(nil)
}

// readPtrs picks the pointers of the states d reads out of the buffers'.
func (k *kernel) readPtrs(d *fir.Diagnostic, ptrs []value.Value) []value.Value {
	var out []value.Value
	for _, s := range d.Reads(k.fn) {
		out = append(out, ptrs[k.bufferIndex(s)])
	}
	return out
}

// diagHostParams are the parameters of a diagnostic's host function.
func diagHostParams() []*ir.Param {
	return []*ir.Param{ir.NewParam("buffers", types.NewPointer(f32Ptr)), ir.NewParam("scalars", f32Ptr),
		ir.NewParam("n", i64), ir.NewParam("lo", i64), ir.NewParam("hi", i64),
		ir.NewParam("num", f32Ptr), ir.NewParam("den", f32Ptr)}
}

// emitDiagHost emits the host function
//
//	void <name>_KIND_cpu(float *const *buffers, const float *scalars, int64_t n,
//	                     int64_t lo, int64_t hi, float *num, float *den)
//
// which computes the partials of the chunks [lo, hi) of the n coordinates
// into num[c] and den[c] (hostReduce), and its AVX2 twin, as
// emitHostFuncs does.
func (k *kernel) emitDiagHost(d *fir.Diagnostic, idx []int) {
	ps := diagHostParams()
	f, b := newHelper(k.m, k.DiagKernel(d.Kind)+"_host", types.Void, ps...)
	var ptrs, scalars []value.Value
	for i := range k.Buffers {
		ptrs = append(ptrs, load(b, f32Ptr, b.NewGetElementPtr(f32Ptr, ps[0], i64c(int64(i))), 8))
	}
	for i := range k.Scalars {
		scalars = append(scalars, load(b, f32, b.NewGetElementPtr(f32, ps[1], i64c(int64(i))), 4))
	}
	r := k.diagReduction(d, idx, scalars)
	done := k.hostReduce(f, b, r, k.readPtrs(d, ptrs), []value.Value{ps[5], ps[6]}, ps[2], ps[3], ps[4])
	done.NewRet(nil)
	name := k.DiagHostFunc(d.Kind)
	for _, v := range []struct {
		name  string
		attrs []ir.FuncAttribute
	}{{name, nil}, {name + "_avx2", []ir.FuncAttribute{ir.AttrPair{Key: "target-cpu", Value: "x86-64-v3"}}}} {
		ps := diagHostParams()
		e := k.m.NewFunc(v.name, types.Void, ps...)
		e.FuncAttrs = append([]ir.FuncAttribute{enum.FuncAttrNoUnwind}, v.attrs...)
		eb := e.NewBlock("entry")
		args := make([]value.Value, len(ps))
		for i, p := range ps {
			args[i] = p
		}
		eb.NewCall(f, args...)
		eb.NewRet(nil)
	}
}
