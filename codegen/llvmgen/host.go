package llvmgen

import (
	"fmt"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/ir"
	llvm "github.com/llir/llvm/ir"
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

// emitHostFuncs emits the host function, one per variant: those whose
// main loops draw the same number of groups share their loops.
func (k *kernel) emitHostFuncs() {
	sig := k.hostSignature()
	k.Kernels.HostFunction, k.Kernels.HostABI = sig.symbol, sig.String()
	k.emitByWidth(sig, func(w lanes) *llvm.Func { return k.emitHostLoops(sig, w) })
}

// emitByWidth emits the variants of the host function sig, each calling
// the loops that loops emits for its width (hostGroupsFor), once a width.
func (k *kernel) emitByWidth(sig signature, loops func(w lanes) *llvm.Func) {
	byWidth := map[lanes]*llvm.Func{}
	for _, w := range hostWidths() {
		byWidth[w] = loops(w)
	}
	k.emitHostVariants(sig, func(v hostisa.Variant) *llvm.Func { return byWidth[hostGroupsFor(v)] })
}

// emitHostLoops emits <name>_host<w>, the host function's loops whose main
// loop draws w groups at once.
func (k *kernel) emitHostLoops(sig signature, w lanes) *llvm.Func {
	ps := sig.newParams()
	f, b := newHelper(k.m, fmt.Sprintf("%s_host%d", k.Name, w), types.Void, ps...)
	a := k.loadArgs(b, ps[0], ps[1])
	sigma := a.scalars[ir.SigmaWScalar(len(a.scalars))]
	a.scalars = a.scalars[:ir.SigmaWScalar(len(a.scalars))]
	lo, hi := rangeStruct.load(b, ps[2], "lo"), rangeStruct.load(b, ps[2], "hi")
	philox, mode, key := k.rangeDraw(b, ps[2], sigma)
	a.round = rounding{seed: philox.seed, step: philox.step, offset: philox.offset}
	k.modeSwitch(f, b, mode, philox, key, func(b *llvm.Block, d *draw) {
		k.hostLoops(f, b, a, splitRange(b, lo, hi, philox.offset, d.block()), lo, d, w)
	})
	return f
}

// rangeDraw loads the noise of a host function's range r: the Philox draw
// of its seed, step and offset with the standard deviation sigma, the
// noise mode and the secure scheme's key.
func (k *kernel) rangeDraw(b *llvm.Block, r *llvm.Param, sigma value.Value) (philox *draw, mode value.Value, key []value.Value) {
	field := func(name string) value.Value { return rangeStruct.load(b, r, name) }
	offset, seed, step, mode := field("offset"), field("seed"), field("step"), field("noise")
	keys := field("key")
	key = []value.Value{b.NewExtractValue(keys, 0), b.NewExtractValue(keys, 1), b.NewExtractValue(keys, 2), b.NewExtractValue(keys, 3)}
	return &draw{seed: seed, step: step, offset: offset, sigma: sigma, drawFuncs: k.noise.host}, mode, key
}

// loadArgs loads the buffers' pointers and the scalars from the arrays a
// host function takes (all the scalars, sqrt(sigma_w2) included).
func (k *kernel) loadArgs(b *llvm.Block, bufs, scalars value.Value) args {
	return args{ptrs: k.loadPtrs(b, bufs), scalars: loadFloats(b, scalars, len(k.Scalars))}
}

// loadPtrs loads the buffers' pointers from the array bufs.
func (k *kernel) loadPtrs(b *llvm.Block, bufs value.Value) []value.Value {
	var out []value.Value
	for i := range k.Buffers {
		out = append(out, k.narrowPtr(b, i, load(b, f32Ptr, b.NewGetElementPtr(f32Ptr, bufs, i64c(int64(i))), 8)))
	}
	return out
}

// loadFloats loads the n floats of the array p.
func loadFloats(b *llvm.Block, p value.Value, n int) []value.Value {
	out := make([]value.Value, n)
	for i := range out {
		out[i] = load(b, f32, b.NewGetElementPtr(f32, p, i64c(int64(i))), 4)
	}
	return out
}

// hostLoops emits the host function's loops from block b: the head, the
// groups of four w at a time (SIMD noise), the remaining groups, the tail.
func (k *kernel) hostLoops(f *llvm.Func, b *llvm.Block, a args, l layout, lo value.Value, d *draw, w lanes) {
	one := i64c(1)
	elements := func(b *llvm.Block, i value.Value) *llvm.Block {
		k.element(b, a, i, d)
		return b
	}
	b = k.forLoop(f, b, "head", lo, l.groupStart, one, elements)
	blk, per := d.block(), int64(w) // a wide iteration steps w groups, one a lane
	wide := b.NewSDiv(l.groups, i64c(per))
	b = k.forLoop(f, b, "wide", i64c(0), wide, one, func(b *llvm.Block, q value.Value) *llvm.Block {
		j := b.NewMul(q, i64c(per))
		base, gi := b.NewAdd(l.groupStart, b.NewMul(j, i64c(blk))), b.NewAdd(l.firstGroup, j)
		if d.secure() {
			return k.wideOctets(f, b, a, base, gi, d, w)
		}
		k.wideGroups(b, a, base, gi, d, w)
		return b
	})
	b = k.forLoop(f, b, "group", b.NewMul(wide, i64c(per)), l.groups, one, func(b *llvm.Block, j value.Value) *llvm.Block {
		k.group(b, a, b.NewAdd(l.groupStart, b.NewMul(j, i64c(blk))), b.NewAdd(l.firstGroup, j), d, false)
		return b
	})
	b = k.forLoop(f, b, "tail", l.tailStart, l.hi, one, elements)
	b.NewRet(nil)
}

// wideGroups emits the steps of the 4·w coordinates from index base, the
// global groups gi..: every buffer is read and written as four vectors of
// w floats, and the noise comes in the same coordinate
// order (gaussianC) and is added to g as whole vectors — g + sigma·z, the
// operations k.step would apply lane by lane — so that no pass breaks the
// noise vectors into single elements to rebuild them in another order.
func (k *kernel) wideGroups(b *llvm.Block, a args, base, gi value.Value, d *draw, w lanes) {
	zs := make([]value.Value, 4)
	if d != nil {
		z := d.call(b, k.noise.gaussianC[w], gi)
		for v := range zs {
			zs[v] = b.NewExtractValue(z, uint64(v))
		}
	}
	k.wideVectors(b, a, base, zs, d, w)
}

// wideOctets emits the steps of the 8·w coordinates from index base, the
// global octets gi..: the secure draws of w octets, one a lane, then a
// loop over the two halves of their eight vectors in coordinate order, each
// stepped as wideGroups steps its four — not eight copies of the body,
// which would double what opt and llc compile for every variant.
func (k *kernel) wideOctets(f *llvm.Func, b *llvm.Block, a args, base, gi value.Value, d *draw, w lanes) *llvm.Block {
	zt := types.NewArray(8, w.f32())
	slot := llvm.NewAlloca(zt)
	entry := f.Blocks[0]
	entry.Insts = append([]llvm.Instruction{slot}, entry.Insts...)
	b.NewStore(d.call(b, k.noise.secure.wide[w], gi), slot)
	return k.forLoop(f, b, "octets", i64c(0), i64c(2), i64c(1), func(b *llvm.Block, h value.Value) *llvm.Block {
		zs := make([]value.Value, 4)
		for v := range zs {
			at := b.NewAdd(b.NewMul(h, i64c(4)), i64c(int64(v)))
			zs[v] = load(b, w.f32(), b.NewGetElementPtr(zt, slot, i64c(0), at), 4)
		}
		k.wideVectors(b, a, b.NewAdd(base, b.NewMul(h, i64c(4*int64(w)))), zs, d, w)
		return b
	})
}

// wideVectors emits the steps of len(zs) vectors of w coordinates from
// index base, zs their noise in coordinate order (nil entries: none): every
// buffer is loaded as whole vectors, and the body on w lanes steps each.
func (k *kernel) wideVectors(b *llvm.Block, a args, base value.Value, zs []value.Value, d *draw, w lanes) {
	at := func(v int) value.Value { return b.NewAdd(base, i64c(int64(v)*int64(w))) }
	words := k.wideBits(b, a.round, base, w)
	for v, z := range zs {
		var vals []value.Value
		for i, p := range a.ptrs {
			x := loadStored(b, k.storage(i), p, at(v), w, 4)
			if z != nil && k.fn.Noise == nil && i == k.bufferIndex(ir.GradName) {
				x = d.add(b, w, x, z)
			}
			vals = append(vals, x)
		}
		res := k.callBody(b, w, a, vals, d, z)
		for j, name := range k.stored {
			bi := k.bufferIndex(name)
			x := b.NewExtractValue(res, uint64(j))
			storeStored(b, k.storage(bi), a.ptrs[bi], at(v), x, w, 4, k.vectorBits(b, words, bi, v, w))
		}
	}
}
