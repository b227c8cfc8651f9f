package cuda

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
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
func splitRange(b *ir.Block, lo, hi, offset value.Value) layout {
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

// bufferParams returns the pointer parameters of the step kernel: noalias
// (buffers must not overlap), readonly where the step never writes, which
// lets llc load them through the non-coherent cache (ld.global.nc).
func (k *kernel) bufferParams() []*ir.Param {
	var params []*ir.Param
	for _, buf := range k.Buffers {
		p := ir.NewParam("p."+buf.Name, f32Ptr)
		p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias)
		if buf.ReadOnly {
			p.Attrs = append(p.Attrs, enum.ParamAttrReadOnly)
		}
		params = append(params, p)
	}
	return params
}

// emitStepKernel emits the NVPTX kernel
//
//	<name>_step(float *buffers..., float scalars..., float sigma_w,
//	            i64 n, i64 offset, i64 seed, i32 step, i32 noise)
//
// a grid-stride loop over the groups of four coordinates (128-bit loads and
// stores when every buffer is 16-byte aligned there), then over the head
// and tail coordinates.
func (k *kernel) emitStepKernel() {
	bufs := k.bufferParams()
	params := append([]*ir.Param(nil), bufs...)
	var a args
	for _, p := range bufs {
		a.ptrs = append(a.ptrs, p)
	}
	for i := range k.Scalars {
		p := ir.NewParam(fmt.Sprintf("s.%d", i), f32)
		params = append(params, p)
		a.scalars = append(a.scalars, p)
	}
	sigma := a.scalars[len(a.scalars)-1]
	a.scalars = a.scalars[:len(a.scalars)-1]
	n, offset, seed := ir.NewParam("n", i64), ir.NewParam("offset", i64), ir.NewParam("seed", i64)
	step, noiseOn := ir.NewParam("step", i32), ir.NewParam("noise", i32)
	params = append(params, n, offset, seed, step, noiseOn)
	f := k.m.NewFunc(k.StepKernel(), types.Void, params...)
	f.CallingConv = enum.CallingConvPTXKernel
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
	b := f.NewBlock("entry")
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
func (k *kernel) threadIndex(b *ir.Block) (tid, stride value.Value) {
	sreg := func(name string) value.Value {
		return b.NewZExt(b.NewCall(intrinsic(k.m, "llvm.nvvm.read.ptx.sreg."+name, i32)), i64)
	}
	ntid := sreg("ntid.x")
	tid = b.NewAdd(b.NewMul(sreg("ctaid.x"), ntid), sreg("tid.x"))
	return tid, b.NewMul(sreg("nctaid.x"), ntid)
}

// aligned reports whether every buffer is 16-byte aligned at coordinate i.
func (k *kernel) aligned(b *ir.Block, ptrs []value.Value, i value.Value) value.Value {
	var all value.Value = constantTrue()
	for _, p := range ptrs {
		addr := b.NewAdd(b.NewPtrToInt(p, i64), b.NewShl(i, i64c(2)))
		all = b.NewAnd(all, b.NewICmp(enum.IPredEQ, b.NewAnd(addr, i64c(15)), i64c(0)))
	}
	return all
}

// gridLoops emits the kernel's loops from block b, with noise d (nil: none).
func (k *kernel) gridLoops(f *ir.Func, b *ir.Block, a args, l layout, aligned, tid, stride value.Value, d *draw) {
	vec, scalar, edge := f.NewBlock(k.label("vector")), f.NewBlock(k.label("scalar")), f.NewBlock(k.label("edges"))
	b.NewCondBr(aligned, vec, scalar)
	for _, v := range []struct {
		b   *ir.Block
		vec bool
	}{{vec, true}, {scalar, false}} {
		done := k.forLoop(f, v.b, "group", tid, l.groups, stride, func(b *ir.Block, j value.Value) *ir.Block {
			k.groups(b, a, b.NewAdd(l.groupStart, b.NewShl(j, i64c(2))), b.NewAdd(l.firstGroup, j), d, 1, v.vec)
			return b
		})
		done.NewBr(edge)
	}
	edges := edge.NewAdd(l.head, edge.NewSub(l.hi, l.tailStart))
	done := k.forLoop(f, edge, "edge", tid, edges, stride, func(b *ir.Block, e value.Value) *ir.Block {
		i := b.NewSelect(b.NewICmp(enum.IPredSLT, e, l.head), e, b.NewAdd(l.tailStart, b.NewSub(e, l.head)))
		k.element(b, a, i, d)
		return b
	})
	done.NewRet(nil)
}
