package llvmgen

import (
	"github.com/fibergen/fibergen/rng"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// hostSignature is the host function
//
//	void <name>_cpu(float *const *buffers, const float *scalars, const struct fibergen_range *r)
//
// which steps the coordinates [r->lo, r->hi) of the buffers, coordinate i
// having global index r->offset + i; scalars holds the host scalars, then
// sqrt(sigma_w2).
func (k *kernel) hostSignature() signature {
	r := param("r", rangeStruct.ptr())
	r.llName = "range"
	return signature{symbol: k.HostFunc(), params: []cparam{param("buffers", cBuffers), param("scalars", cScalars), r}}
}

// emitHostFuncs emits the host function and its AVX2 twin.
func (k *kernel) emitHostFuncs() {
	sig := k.hostSignature()
	k.Kernels.HostFunction, k.Kernels.HostABI = sig.symbol, sig.String()
	k.emitHostTwins(sig, k.emitHostLoops(sig))
}

// emitHostLoops emits <name>_host, the host function's loops.
func (k *kernel) emitHostLoops(sig signature) *llvm.Func {
	ps := sig.newParams()
	f, b := newHelper(k.m, k.Name+"_host", types.Void, ps...)
	a := k.loadArgs(b, ps[0], ps[1])
	sigma := a.scalars[len(a.scalars)-1]
	a.scalars = a.scalars[:len(a.scalars)-1]
	field := func(name string) value.Value { return rangeStruct.load(b, ps[2], name) }
	lo, hi, offset, seed, step, noiseOn := field("lo"), field("hi"), field("offset"), field("seed"), field("step"), field("noise")
	l := splitRange(b, lo, hi, offset)
	withNoise, without := f.NewBlock("with_noise"), f.NewBlock("without_noise")
	b.NewCondBr(b.NewICmp(enum.IPredNE, noiseOn, i32c(0)), withNoise, without)
	d := &draw{seed: seed, step: step, offset: offset, sigma: sigma}
	k.hostLoops(f, withNoise, a, l, lo, d)
	k.hostLoops(f, without, a, l, lo, nil)
	return f
}

// loadArgs loads the buffers' pointers and the scalars from the arrays a
// host function takes (all the scalars, sqrt(sigma_w2) included).
func (k *kernel) loadArgs(b *llvm.Block, bufs, scalars value.Value) args {
	var a args
	for i := range k.Buffers {
		a.ptrs = append(a.ptrs, load(b, f32Ptr, b.NewGetElementPtr(f32Ptr, bufs, i64c(int64(i))), 8))
	}
	for i := range k.Scalars {
		a.scalars = append(a.scalars, load(b, f32, b.NewGetElementPtr(f32, scalars, i64c(int64(i))), 4))
	}
	return a
}

// hostLoops emits the host function's loops from block b: the head, the
// groups of four hostGroups at a time (SIMD noise), the remaining groups,
// the tail.
func (k *kernel) hostLoops(f *llvm.Func, b *llvm.Block, a args, l layout, lo value.Value, d *draw) {
	one := i64c(1)
	elements := func(b *llvm.Block, i value.Value) *llvm.Block {
		k.element(b, a, i, d)
		return b
	}
	b = k.forLoop(f, b, "head", lo, l.groupStart, one, elements)
	wide := b.NewSDiv(l.groups, i64c(hostGroups))
	b = k.forLoop(f, b, "wide", i64c(0), wide, one, func(b *llvm.Block, q value.Value) *llvm.Block {
		j := b.NewMul(q, i64c(hostGroups))
		k.wideGroups(b, a, b.NewAdd(l.groupStart, b.NewShl(j, i64c(2))), b.NewAdd(l.firstGroup, j), d)
		return b
	})
	b = k.forLoop(f, b, "group", b.NewMul(wide, i64c(hostGroups)), l.groups, one, func(b *llvm.Block, j value.Value) *llvm.Block {
		k.groups(b, a, b.NewAdd(l.groupStart, b.NewShl(j, i64c(2))), b.NewAdd(l.firstGroup, j), d, 1, false)
		return b
	})
	b = k.forLoop(f, b, "tail", l.tailStart, l.hi, one, elements)
	b.NewRet(nil)
}

// wideGroups emits the steps of the 4·hostGroups coordinates from index
// base, the global groups gi..: every buffer is read and written as four
// vectors of hostGroups floats, and the noise comes in the same coordinate
// order (gaussianC) and is added to g as whole vectors — g + sigma·z, the
// operations k.step would apply lane by lane — so that no pass breaks the
// noise vectors into single elements to rebuild them in another order.
func (k *kernel) wideGroups(b *llvm.Block, a args, base, gi value.Value, d *draw) {
	w := lanes(hostGroups)
	vt := w.f32()
	vecAt := func(p value.Value, v int) value.Value {
		return b.NewBitCast(b.NewGetElementPtr(f32, p, b.NewAdd(base, i64c(int64(v*hostGroups)))), types.NewPointer(vt))
	}
	var z value.Value
	if d != nil {
		z = b.NewCall(k.noise.gaussianC, d.seed, d.step, i32c(rng.GradientSite), gi)
	}
	coords := make([][]value.Value, 4*hostGroups) // coords[c][buffer]
	for i, p := range a.ptrs {
		for v := 0; v < 4; v++ {
			x := load(b, vt, vecAt(p, v), 4)
			if z != nil && i == k.bufferIndex("g") {
				x = b.NewFAdd(x, b.NewFMul(w.splat(b, d.sigma), b.NewExtractValue(z, uint64(v))))
			}
			for l := 0; l < hostGroups; l++ {
				coords[v*hostGroups+l] = append(coords[v*hostGroups+l], b.NewExtractElement(x, i32c(uint32(l))))
			}
		}
	}
	outs := make([][]value.Value, len(coords))
	for c := range coords {
		outs[c] = k.step(b, a, coords[c], nil, nil)
	}
	for j, name := range k.stored {
		p := a.ptrs[k.bufferIndex(name)]
		for v := 0; v < 4; v++ {
			var x value.Value = constantUndef(vt)
			for l := 0; l < hostGroups; l++ {
				x = b.NewInsertElement(x, outs[v*hostGroups+l][j], i32c(uint32(l)))
			}
			store(b, x, vecAt(p, v), 4)
		}
	}
}
