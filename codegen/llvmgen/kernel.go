package llvmgen

import (
	"math/bits"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/rng"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
)

// layout is how a launch splits its n coordinates: a head of up to blk-1
// coordinates until the global index is a multiple of blk, whole groups of
// blk (one draw call each — a Philox group of four, a secure octet of eight
// — 128-bit accesses where aligned), then a tail.
type layout struct {
	head, groups, tailStart value.Value // counts and index, i64
	groupStart, firstGroup  value.Value // index of the first group's first coordinate; its global group
	hi                      value.Value // the end of the range
}

// splitRange computes the layout of the coordinates [lo, hi) of buffers whose
// coordinate 0 has global index offset, in groups of blk (a power of two).
func splitRange(b *llvm.Block, lo, hi, offset value.Value, blk int64) layout {
	n := b.NewSub(hi, lo)
	h0 := b.NewAnd(b.NewSub(i64c(blk), b.NewAnd(b.NewAdd(offset, lo), i64c(blk-1))), i64c(blk-1))
	head := b.NewSelect(b.NewICmp(enum.IPredSLT, h0, n), h0, n)
	shift := i64c(int64(bits.TrailingZeros64(uint64(blk))))
	groups := b.NewAShr(b.NewSub(n, head), shift)
	groupStart := b.NewAdd(lo, head)
	return layout{
		head: head, groups: groups, groupStart: groupStart, hi: hi,
		tailStart:  b.NewAdd(groupStart, b.NewShl(groups, shift)),
		firstGroup: b.NewLShr(b.NewAdd(offset, groupStart), shift),
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
		[]cparam{param("n", cU64), param("offset", cU64), param("seed", cU64), param("step", cU32), param("noise", cU32),
			param("key0", cU64), param("key1", cU64), param("key2", cU64), param("key3", cU64)})
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
	n, offset, seed, step, mode := rest[0], rest[1], rest[2], rest[3], rest[4]
	tid, stride := k.threadIndex(b)
	key := []value.Value{rest[5], rest[6], rest[7], rest[8]}
	d := &draw{seed: seed, step: step, offset: offset, sigma: sigma, drawFuncs: k.noise.device}
	a.round = rounding{seed: seed, step: step, offset: offset}
	k.modeSwitch(f, b, mode, d, key, func(b *llvm.Block, d *draw) {
		l := splitRange(b, i64c(0), n, offset, d.block())
		k.gridLoops(f, b, a, l, k.alignedBuffers(b, a.ptrs, l.groupStart), tid, stride, d)
	})
}

// modeSwitch branches from b on the noise mode (rng.Mode) to a copy of the
// loops emit emits for each draw: 0 none (nil), 1 Philox (philox), 2 the
// secure scheme (philox's launch and draw functions under key); any
// other mode writes nothing — it neither skips the noise nor guesses a
// scheme (Philox under a secure run's seed 0 would be noise anyone can
// compute).
func (k *kernel) modeSwitch(f *llvm.Func, b *llvm.Block, mode value.Value, philox *draw, key []value.Value, emit func(*llvm.Block, *draw)) {
	none, ph, sec, bad := f.NewBlock("without_noise"), f.NewBlock("with_noise"), f.NewBlock("with_secure_noise"), f.NewBlock("unknown_mode")
	b.NewSwitch(mode, bad, llvm.NewCase(i32c(uint32(rng.Off)), none), llvm.NewCase(i32c(uint32(rng.Philox)), ph), llvm.NewCase(i32c(uint32(rng.Secure)), sec))
	bad.NewRet(nil)
	secure := *philox
	secure.key = key
	secure.gamma, secure.inv = snapGrid(sec, secure.sigma)
	emit(none, nil)
	emit(ph, philox)
	emit(sec, &secure)
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

// aligned reports whether every float32 row of ptrs is 16-byte aligned at
// coordinate i.
func (k *kernel) aligned(b *llvm.Block, ptrs []value.Value, i value.Value) value.Value {
	sizes := make([]int64, len(ptrs))
	for j := range sizes {
		sizes[j] = 4
	}
	return alignedAt(b, ptrs, sizes, i)
}

// alignedBuffers reports whether every buffer's four stored values at
// coordinate i are one aligned vector: 16 bytes of float32, 8 of a 16-bit type.
func (k *kernel) alignedBuffers(b *llvm.Block, ptrs []value.Value, i value.Value) value.Value {
	sizes := make([]int64, len(ptrs))
	for j := range sizes {
		sizes[j] = int64(k.storage(j).DType.Size())
	}
	return alignedAt(b, ptrs, sizes, i)
}

// alignedAt reports whether every row ptrs[j], of values of sizes[j] bytes
// (a power of two), is aligned to four values at coordinate i.
func alignedAt(b *llvm.Block, ptrs []value.Value, sizes []int64, i value.Value) value.Value {
	var all value.Value = constantTrue()
	for j, p := range ptrs {
		shift := int64(bits.TrailingZeros64(uint64(sizes[j])))
		addr := b.NewAdd(b.NewPtrToInt(p, i64), b.NewShl(i, i64c(shift)))
		all = b.NewAnd(all, b.NewICmp(enum.IPredEQ, b.NewAnd(addr, i64c(4*sizes[j]-1)), i64c(0)))
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
			k.group(b, a, b.NewAdd(l.groupStart, b.NewMul(j, i64c(d.block()))), b.NewAdd(l.firstGroup, j), d, v.vec)
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
