package llvmgen

import (
	"slices"

	"github.com/fibergen/fibergen/ir"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
)

// layout is how a launch splits its n coordinates: a head of up to three
// coordinates until the global index is a multiple of four, whole groups of
// four (one Philox call each, 128-bit accesses where aligned), then a tail.
type layout struct {
	head, groups, tailStart value.Value // counts and index, i64
	groupStart, firstGroup  value.Value // index of the first group's first coordinate; its global group
	hi                      value.Value // the end of the range
}

// splitRange computes the layout of the coordinates [lo, hi) of buffers whose
// coordinate 0 has global index offset.
func splitRange(b *llvm.Block, lo, hi, offset value.Value) layout {
	n := b.NewSub(hi, lo)
	h0 := b.NewAnd(b.NewSub(i64c(4), b.NewAnd(b.NewAdd(offset, lo), i64c(3))), i64c(3))
	head := b.NewSelect(b.NewICmp(enum.IPredSLT, h0, n), h0, n)
	groups := b.NewAShr(b.NewSub(n, head), i64c(2))
	groupStart := b.NewAdd(lo, head)
	return layout{
		head: head, groups: groups, groupStart: groupStart, hi: hi,
		tailStart:  b.NewAdd(groupStart, b.NewShl(groups, i64c(2))),
		firstGroup: b.NewLShr(b.NewAdd(offset, groupStart), i64c(2)),
	}
}

// stepSignature is the NVPTX kernel
//
//	<name>_step(float *buffers..., float S0..., float sigma_w,
//	            u64 n, u64 offset, u64 seed, u32 step, u32 noise)
//
// its buffers noalias (they must not overlap) and readonly where the step
// never writes, which lets llc load them through the non-coherent cache
// (ld.global.nc).
func (k *kernel) stepSignature() signature {
	ps := slices.Concat(k.bufferParams(func(b ir.Buffer) bool { return b.ReadOnly }), k.scalarParams(),
		[]cparam{param("n", cU64), param("offset", cU64), param("seed", cU64), param("step", cU32), param("noise", cU32)})
	return signature{symbol: k.StepKernel(), kernel: true, params: ps}
}

// emitStepKernel emits the step kernel: a grid-stride loop over the groups
// of four coordinates (128-bit loads and stores when every buffer is
// 16-byte aligned there), then over the head and tail coordinates.
func (k *kernel) emitStepKernel() {
	sig := k.stepSignature()
	k.Kernels.StepKernel, k.Kernels.StepABI = sig.symbol, sig.String()
	f, b := k.newEntry(sig, sig.symbol)
	a, rest := k.kernelArgs(f)
	sigma := a.scalars[ir.SigmaWScalar(len(a.scalars))]
	a.scalars = a.scalars[:ir.SigmaWScalar(len(a.scalars))]
	n, offset, seed, step, noiseOn := rest[0], rest[1], rest[2], rest[3], rest[4]
	tid, stride := k.threadIndex(b)
	l := splitRange(b, i64c(0), n, offset)
	aligned := k.aligned(b, a.ptrs, l.groupStart)
	d := &draw{seed: seed, step: step, offset: offset, sigma: sigma}
	withNoise, without := f.NewBlock("with_noise"), f.NewBlock("without_noise")
	b.NewCondBr(b.NewICmp(enum.IPredNE, noiseOn, i32c(0)), withNoise, without)
	k.gridLoops(f, withNoise, a, l, aligned, tid, stride, d)
	k.gridLoops(f, without, a, l, aligned, tid, stride, nil)
}

// threadIndex returns the global thread index and the grid's thread count.
func (k *kernel) threadIndex(b *llvm.Block) (tid, stride value.Value) {
	sreg := func(name string) value.Value {
		return b.NewZExt(b.NewCall(intrinsic(k.m, "llvm.nvvm.read.ptx.sreg."+name, i32)), i64)
	}
	ntid := sreg("ntid.x")
	tid = b.NewAdd(b.NewMul(sreg("ctaid.x"), ntid), sreg("tid.x"))
	return tid, b.NewMul(sreg("nctaid.x"), ntid)
}

// aligned reports whether every buffer is 16-byte aligned at coordinate i.
func (k *kernel) aligned(b *llvm.Block, ptrs []value.Value, i value.Value) value.Value {
	var all value.Value = constantTrue()
	for _, p := range ptrs {
		addr := b.NewAdd(b.NewPtrToInt(p, i64), b.NewShl(i, i64c(2)))
		all = b.NewAnd(all, b.NewICmp(enum.IPredEQ, b.NewAnd(addr, i64c(15)), i64c(0)))
	}
	return all
}

// gridLoops emits the kernel's loops from block b, with noise d (nil: none).
func (k *kernel) gridLoops(f *llvm.Func, b *llvm.Block, a args, l layout, aligned, tid, stride value.Value, d *draw) {
	vec, scalar, edge := f.NewBlock(k.label("vector")), f.NewBlock(k.label("scalar")), f.NewBlock(k.label("edges"))
	b.NewCondBr(aligned, vec, scalar)
	for _, v := range []struct {
		b   *llvm.Block
		vec bool
	}{{vec, true}, {scalar, false}} {
		done := k.forLoop(f, v.b, "group", tid, l.groups, stride, func(b *llvm.Block, j value.Value) *llvm.Block {
			k.group(b, a, b.NewAdd(l.groupStart, b.NewShl(j, i64c(2))), b.NewAdd(l.firstGroup, j), d, v.vec)
			return b
		})
		done.NewBr(edge)
	}
	edges := edge.NewAdd(l.head, edge.NewSub(l.hi, l.tailStart))
	done := k.forLoop(f, edge, "edge", tid, edges, stride, func(b *llvm.Block, e value.Value) *llvm.Block {
		i := b.NewSelect(b.NewICmp(enum.IPredSLT, e, l.head), e, b.NewAdd(l.tailStart, b.NewSub(e, l.head)))
		k.element(b, a, i, d)
		return b
	})
	done.NewRet(nil)
}
