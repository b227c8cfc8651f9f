package llvmgen

import (
	"fmt"
	"slices"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
)

// This file emits the diagnostics' entry points (docs/kernels.md,
// "Diagnostics"): for each declared diagnostic KIND an NVPTX kernel
// <name>_KIND and a host function <name>_KIND_cpu (with its AVX2 and
// AVX-512 twins) that compute the chunk partials of the diagnostic's sums
// from the states after a step, in the order of reduce.go. They take the
// step's buffers and scalars as the step entry points do, and read only
// the states they need.

// DiagKernel is the NVPTX kernel of a diagnostic, e.g. fiber_clamp_mass.
func (k *Module) DiagKernel(kind string) string { return k.Name + "_" + kind }

// DiagHostFunc is the host function of a diagnostic, e.g. fiber_clamp_mass_cpu.
func (k *Module) DiagHostFunc(kind string) string { return k.DiagKernel(kind) + hostSuffix }

// emitDiagnostics emits the entry points of every declared diagnostic.
func (k *kernel) emitDiagnostics() error {
	for _, d := range k.fn.Diags {
		idx, err := d.ScalarIndexes(k.fn)
		if err != nil {
			return fmt.Errorf("llvmgen: %s: %w", k.Name, err)
		}
		kernel, host := k.diagSignature(d.Kind), k.diagHostSignature(d.Kind)
		k.Kernels.Diagnostics = append(k.Kernels.Diagnostics, manifest.Diagnostic{Kind: d.Kind, Args: d.Args, Reads: d.Reads(k.fn),
			Chunk: ReduceChunk, Kernel: kernel.symbol, KernelABI: kernel.String(), HostFunction: host.symbol, HostABI: host.String()})
		k.emitDiagKernel(d, idx, kernel)
		k.emitDiagHost(d, idx, host)
	}
	return nil
}

// diagReduction is the reduction of d's terms: the inputs are the states d
// reads, the sums num and den; scalars are the step's scalar values.
func (k *kernel) diagReduction(d *ir.Diagnostic, idx []int, scalars []value.Value) reduction {
	reads := d.Reads(k.fn)
	return reduction{inputs: len(reads), stored: k.storages(reads), sums: len(ir.DiagTerms),
		terms: func(b *llvm.Block, w lanes, in []value.Value) []value.Value {
			host := make([]value.Value, len(idx))
			for i, j := range idx {
				host[i] = scalars[j]
			}
			return k.blockTerms(b, w, d.Block, ir.DiagTerms, host, in, reads)
		}}
}

// blockTerms emits the per-coordinate values of blk, a block that stores
// terms, on w lanes of coordinates whose buffers it loads are in (in the
// order of reads); host are the values of its host scalars
// (ir.HostScalars order). It returns the stored terms in the order of terms.
func (k *kernel) blockTerms(b *llvm.Block, w lanes, blk *ir.Block, terms []string, host, in []value.Value, reads []string) []value.Value {
	vals := map[*ir.Value]value.Value{}
	for i, v := range ir.HostScalars(blk) {
		vals[v] = broadcast(b, w, host[i])
	}
	out := make([]value.Value, len(terms))
	for _, v := range blk.Values {
		switch {
		case v.Op == ir.OpStore:
			out[slices.Index(terms, v.Name)] = k.lanesOperand(w, vals, v.Args[0])
		case v.Op == ir.OpLoad:
			vals[v] = in[slices.Index(reads, v.Name)]
		case !v.Uniform:
			vals[v] = k.lanesInstr(b, w, v, vals)
		}
	}
	return out
}

// lanesOperand is the value of operand v on w lanes: a constant in every lane.
func (k *kernel) lanesOperand(w lanes, vals map[*ir.Value]value.Value, v *ir.Value) value.Value {
	if v.IsConst() {
		return w.f(float32(v.Const))
	}
	return vals[v]
}

// lanesInstr emits the per-coordinate value v on w lanes, with the
// operations of instr.
func (k *kernel) lanesInstr(b *llvm.Block, w lanes, v *ir.Value, vals map[*ir.Value]value.Value) value.Value {
	arg := func(i int) value.Value { return k.lanesOperand(w, vals, v.Args[i]) }
	switch v.Op {
	case ir.OpAdd:
		return b.NewFAdd(arg(0), arg(1))
	case ir.OpSub:
		return b.NewFSub(arg(0), arg(1))
	case ir.OpMul:
		return b.NewFMul(arg(0), arg(1))
	case ir.OpDiv:
		return b.NewFDiv(arg(0), arg(1))
	case ir.OpNeg, ir.OpAbs:
		return bitFlip(b, w, arg(0), v.Op == ir.OpAbs)
	case ir.OpSqrt:
		return b.NewCall(w.sqrt(k.m), arg(0))
	case ir.OpMin, ir.OpMax:
		return selectMinMax(b, arg(0), arg(1), v.Op == ir.OpMax)
	case ir.OpSign:
		return selectSign(b, w, arg(0))
	case ir.OpEq, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpNe:
		return compare(b, w, v.Op, arg(0), arg(1))
	case ir.OpSelect:
		return selectIf(b, w, arg(0), arg(1), arg(2))
	}
	return w.f(0) // ir.Verify admits no other per-coordinate op
}

// diagSignature is the NVPTX kernel of a diagnostic
//
//	<name>_KIND(float *buffers..., float S0..., float sigma_w, u64 n, float *num, float *den)
//
// with the step kernel's buffers and scalars; it reads every buffer only.
func (k *kernel) diagSignature(kind string) signature {
	ps := slices.Concat(k.bufferParams(func(ir.Buffer) bool { return true }), k.scalarParams(),
		[]cparam{param("n", cU64), param("num", cFloatPtr), param("den", cFloatPtr)})
	return signature{symbol: k.DiagKernel(kind), kernel: true, params: ps}
}

// emitDiagKernel emits the kernel of d, whose warps take the chunks of the
// n coordinates in turn (warpReduce).
func (k *kernel) emitDiagKernel(d *ir.Diagnostic, idx []int, sig signature) {
	f, b := k.newEntry(sig, sig.symbol)
	a, rest := k.kernelArgs(f)
	n, num, den := rest[0], rest[1], rest[2]
	r := k.diagReduction(d, idx, a.scalars)
	done := k.warpReduce(f, b, r, k.readPtrs(d, a.ptrs), []value.Value{num, den}, i64c(1), n)
	done.NewRet(nil)
}

// readPtrs picks the pointers of the states d reads out of the buffers'.
func (k *kernel) readPtrs(d *ir.Diagnostic, ptrs []value.Value) []value.Value {
	var out []value.Value
	for _, s := range d.Reads(k.fn) {
		out = append(out, ptrs[k.bufferIndex(s)])
	}
	return out
}

// diagHostSignature is the host function of a diagnostic
//
//	void <name>_KIND_cpu(float *const *buffers, const float *scalars, int64_t n,
//	                     int64_t lo, int64_t hi, float *num, float *den)
//
// which computes the partials of the chunks [lo, hi) of the n coordinates
// into num[c] and den[c] (hostReduce).
func (k *kernel) diagHostSignature(kind string) signature {
	return signature{symbol: k.DiagHostFunc(kind), params: []cparam{param("buffers", cBuffers), param("scalars", cScalars),
		param("n", cInt64), param("lo", cInt64), param("hi", cInt64), param("num", cFloatPtr), param("den", cFloatPtr)}}
}

// emitDiagHost emits the host function of d, one per variant.
func (k *kernel) emitDiagHost(d *ir.Diagnostic, idx []int, sig signature) {
	ps := sig.newParams()
	f, b := newHelper(k.m, k.DiagKernel(d.Kind)+"_host", types.Void, ps...)
	a := k.loadArgs(b, ps[0], ps[1])
	r := k.diagReduction(d, idx, a.scalars)
	done := k.hostReduce(f, b, r, k.readPtrs(d, a.ptrs), []value.Value{ps[5], ps[6]}, ps[2], ps[3], ps[4])
	done.NewRet(nil)
	k.emitHostVariants(sig, sameLoops(f))
}
