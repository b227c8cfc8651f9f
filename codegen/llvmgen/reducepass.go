package llvmgen

import (
	"fmt"
	"math/bits"
	"slices"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
)

// This file emits the reduction pass of an optimizer whose step reads
// per-tensor reductions (docs/kernels.md, "Reductions"): an NVPTX kernel
// <name>_reduce and a host function <name>_reduce_cpu (with its variants)
// that compute, over one tensor's coordinates, the chunk partials of every
// term of the reduce block, in the order of reduce.go. They read the
// buffers before the step and privatize g as the step does — the same
// draw of the same global index, so the same bits — and write the partials
// and, where the caller gives a place for it (kept, not null), the
// privatized gradient, which the step then reads with no noise of its own:
// the noise is drawn once (docs/kernels.md, "Reductions").

// ReduceKernel is the NVPTX kernel of the reduction pass, e.g. lamb_reduce.
func (k *Module) ReduceKernel() string { return k.Name + "_reduce" }

// ReduceHostFunc is the host function of the reduction pass, e.g.
// lamb_reduce_cpu.
func (k *Module) ReduceHostFunc() string { return k.ReduceKernel() + hostSuffix }

// emitReducePass emits the reduction pass's entry points, if the step has
// reductions.
func (k *kernel) emitReducePass() {
	if k.fn.Reduce == nil {
		return
	}
	kernel, host := k.reduceSignature(), k.reduceHostSignature()
	var scalars []string
	for _, v := range ir.HostScalars(k.fn.Reduce) {
		scalars = append(scalars, ir.ExprString(v))
	}
	k.Kernels.Reduce = &manifest.Reduce{Terms: k.fn.ReduceTerms(), Reads: k.fn.ReduceReads(), Scalars: append(scalars, "sqrt(sigma_w2)"),
		Chunk: ReduceChunk, Kernel: kernel.symbol, KernelABI: kernel.String(), HostFunction: host.symbol, HostABI: host.String()}
	if k.fn.ReduceFolds() {
		k.Kernels.Reduce.Combine = k.fn.ReduceCombineNames()
	}
	k.Kernels.Reduce.Version = k.Kernels.Reduce.WantVersion()
	k.emitReduceKernel(kernel)
	k.emitReduceHost(host)
}

// reduceScalarParams are the reduce block's host scalars R0, R1, ... and
// sigma_w ("r.I" in LLVM).
func (k *kernel) reduceScalarParams() []cparam {
	return scalarParamsNamed(len(ir.HostScalars(k.fn.Reduce))+1, "R", "r")
}

// reduceSignature is the NVPTX kernel of the reduction pass
//
//	<name>_reduce(float *buffers..., float R0..., float sigma_w, u64 n, u64 offset,
//	              u64 seed, u32 step, u32 noise, u64 key0..3, float *partials, float *kept)
//
// over the n coordinates of one tensor, coordinate 0 of global index
// offset; partials[i·chunks(n) + c] is term i's sum over chunk c, and
// kept[i] (kept not null) coordinate i's privatized gradient.
func (k *kernel) reduceSignature() signature {
	ps := slices.Concat(k.bufferParams(func(ir.Buffer) bool { return true }), k.reduceScalarParams(),
		[]cparam{param("n", cU64), param("offset", cU64), param("seed", cU64), param("step", cU32), param("noise", cU32),
			param("key0", cU64), param("key1", cU64), param("key2", cU64), param("key3", cU64), param("partials", cFloatPtr), param("kept", cFloatPtr)})
	return signature{symbol: k.ReduceKernel(), kernel: true, params: ps}
}

// emitReduceKernel emits the kernel, whose warps take the chunks in turn
// (warpReduce), in each noise scheme (modeSwitch).
func (k *kernel) emitReduceKernel(sig signature) {
	f, b := k.newEntry(sig, sig.symbol)
	nb, ns := len(k.Buffers), len(ir.HostScalars(k.fn.Reduce))+1
	ptrs, scalars, rest := paramValues(f.Params[:nb]), paramValues(f.Params[nb:nb+ns]), f.Params[nb+ns:]
	n, offset := rest[0], rest[1]
	d := &draw{seed: rest[2], step: rest[3], offset: offset, sigma: scalars[ns-1], drawFuncs: k.noise.device}
	outs := k.termRows(b, rest[9], n)
	k.modeSwitch(f, b, rest[4], d, paramValues(rest[5:9]), func(b *llvm.Block, d *draw) {
		r := k.reducePass(d, k.noiseLane, scalars[:ns-1], rest[10])
		k.warpReduce(f, b, r, k.reducePtrs(ptrs), outs, i64c(1), n).NewRet(nil)
	})
}

// reduceHostSignature is the host function of the reduction pass
//
//	void <name>_reduce_cpu(float *const *buffers, const float *scalars, int64_t n,
//	                       const struct fibergen_range *r, float *partials, float *kept)
//
// which computes the partials of the chunks [r->lo, r->hi) of the n
// coordinates (of global index r->offset + i) in r's noise, and where kept
// is not null stores their privatized gradient at kept[i]; scalars are the
// reduce block's, then sqrt(sigma_w2).
func (k *kernel) reduceHostSignature() signature {
	r := param("r", rangeStruct.ptr())
	r.llName = "range"
	return signature{symbol: k.ReduceHostFunc(), params: []cparam{param("buffers", cBuffers), param("scalars", cScalars),
		param("n", cInt64), r, param("partials", cFloatPtr), param("kept", cFloatPtr)}}
}

// emitReduceHost emits the host function, one for every variant: those
// whose step draws the same number of groups at once share their loops,
// which draw the noise as wide.
func (k *kernel) emitReduceHost(sig signature) {
	k.emitByWidth(sig, func(w lanes) *llvm.Func { return k.emitReduceLoops(sig, w) })
}

// emitReduceLoops emits <name>_reduce_host<w>, the host function's loops
// drawing the noise of w groups (Philox) or w octets (secure) a call.
func (k *kernel) emitReduceLoops(sig signature, w lanes) *llvm.Func {
	ps := sig.newParams()
	f, b := newHelper(k.m, fmt.Sprintf("%s_host%d", k.ReduceKernel(), w), types.Void, ps...)
	ns := len(ir.HostScalars(k.fn.Reduce)) + 1
	ptrs, scalars := k.loadPtrs(b, ps[0]), loadFloats(b, ps[1], ns)
	lo, hi := rangeStruct.load(b, ps[3], "lo"), rangeStruct.load(b, ps[3], "hi")
	philox, mode, key := k.rangeDraw(b, ps[3], scalars[ns-1])
	outs := k.termRows(b, ps[4], ps[2])
	k.modeSwitch(f, b, mode, philox, key, func(b *llvm.Block, d *draw) {
		r := k.reducePass(d, func(secure bool) *llvm.Func { return k.noiseRow(reduceRow, w, secure) }, scalars[:ns-1], ps[5])
		k.hostReduce(f, b, r, k.reducePtrs(ptrs), outs, ps[2], lo, hi).NewRet(nil)
	})
	return f
}

// termRows returns where each term's partials start: partials + i·chunks(n).
func (k *kernel) termRows(b *llvm.Block, partials, n value.Value) []value.Value {
	nchunks := chunkCount(b, n)
	out := make([]value.Value, k.fn.NumReductions())
	for i := range out {
		out[i] = b.NewGetElementPtr(f32, partials, b.NewMul(nchunks, i64c(int64(i))))
	}
	return out
}

// reducePtrs picks the buffers the reduce block reads.
func (k *kernel) reducePtrs(ptrs []value.Value) []value.Value {
	var out []value.Value
	for _, name := range k.fn.ReduceReads() {
		out = append(out, ptrs[k.bufferIndex(name)])
	}
	return out
}

// reducePass is the reduction of the reduce block's terms, g privatized
// with the noise d (nil: none) at the global index of each element, the
// Gaussians of the elements a loop takes at once drawn by noise(secure)
// (noiseLane, or a host's noiseRow), and kept at the float pointer kept
// (null at run time: not kept); scalars are the block's host scalars.
func (k *kernel) reducePass(d *draw, noise func(secure bool) *llvm.Func, scalars []value.Value, kept value.Value) reduction {
	reads := k.fn.ReduceReads()
	g := slices.Index(reads, ir.GradName)
	r := reduction{inputs: len(reads), stored: k.storages(reads), sums: k.fn.NumReductions(), combines: k.fn.ReduceCombines(), prefetch: true,
		terms: func(b *llvm.Block, w lanes, in []value.Value) []value.Value {
			return k.blockTerms(b, w, k.fn.Reduce, k.fn.ReduceTerms(), scalars, in, reads)
		}}
	if d == nil || g < 0 {
		return r
	}
	helper := noise(d.secure())
	r.keep, r.noise = kept, &passNoise{grad: g, add: d.add, draw: func(b *llvm.Block, at value.Value) value.Value {
		return b.NewCall(helper, append(d.keyArgs(), d.step, b.NewAdd(d.offset, at))...)
	}}
	return r
}

// laneElems is the number of consecutive elements a lane of the device's
// reduction takes at once (laneTerms).
const laneElems = 4

// helperDraw is the parameters of a noise helper, (seed | key0..3, step,
// first), and its draw on them.
func helperDraw(secure bool, funcs drawFuncs) ([]*llvm.Param, *draw) {
	params := []*llvm.Param{llvm.NewParam("seed", i64)}
	if secure {
		params = []*llvm.Param{llvm.NewParam("key0", i64), llvm.NewParam("key1", i64), llvm.NewParam("key2", i64), llvm.NewParam("key3", i64)}
	}
	params = append(params, llvm.NewParam("step", i32), llvm.NewParam("first", i64))
	d := &draw{seed: params[0], step: params[len(params)-2], drawFuncs: funcs}
	if secure {
		d.key, d.gamma = paramValues(params[:4]), f32c(1) // gamma marks the scheme; the draw does not read it
	}
	return params, d
}

// noiseLane returns the device helper that draws the Gaussians of the four
// elements from a global index, in the Philox or the secure scheme:
// (seed | key0..3, step, first) <4 x float>, inlined. Where first is a
// multiple of four it draws the one block (Philox group, secure octet)
// that holds them, else the two that do, and picks the four: the same bits
// as four draws of one element, for a quarter (an eighth, secure) of the
// work.
func (k *kernel) noiseLane(secure bool) *llvm.Func {
	name := fmt.Sprintf("%s_noise_lane_%v", k.Name, secure)
	if f := funcNamed(k.m, name); f != nil {
		return f
	}
	params, d := helperDraw(secure, k.noise.device)
	f, b := newHelper(k.m, name, lanes(laneElems).f32(), params...)
	first, blk := params[len(params)-1], d.block()
	idx, off := b.NewLShr(first, i64c(int64(bits.TrailingZeros64(uint64(blk))))), b.NewAnd(first, i64c(blk-1))
	aligned := b.NewICmp(enum.IPredEQ, b.NewAnd(first, i64c(laneElems-1)), i64c(0))
	b, z := k.ifElse(f, b, aligned, func(b *llvm.Block) (*llvm.Block, []value.Value) {
		return b, pickLane(b, k.blockValues(b, d, idx), off)
	}, func(b *llvm.Block) (*llvm.Block, []value.Value) {
		return b, pickLane(b, append(k.blockValues(b, d, idx), k.blockValues(b, d, b.NewAdd(idx, i64c(1)))...), off)
	})
	b.NewRet(packLanes(b, z))
	return f
}

// blockValues are the Gaussians of the block (Philox group, secure octet)
// idx of the draw d, in order (drawGroup).
func (k *kernel) blockValues(b *llvm.Block, d *draw, idx value.Value) []value.Value {
	elem := k.drawGroup(b, idx, d)
	out := make([]value.Value, d.block())
	for e := range out {
		out[e] = elem(e)
	}
	return out
}

// pickLane returns vals[off+e] for e < laneElems: off chosen by selects
// on its bits, vals at least off+laneElems long for every off it can be.
func pickLane(b *llvm.Block, vals []value.Value, off value.Value) []value.Value {
	out := make([]value.Value, laneElems)
	for e := range out {
		out[e] = selectByBits(b, vals[e:e+len(vals)-laneElems+1], off)
	}
	return out
}

// noiseRow returns the helper that draws the Gaussians of w consecutive
// elements from a global index, in the Philox or the secure scheme:
// (seed | key0..3, step, first) <w x float>, with the host step's wide
// draws, groups groups or octets a call: from first where it starts a
// block of draws (a Philox group of four, a secure octet of eight), else
// from the block that holds it, one call more, the row then read from
// inside; each gives the same bits as one element's draw at a time. w must
// be a multiple of a call's elements (4·groups, secure 8·groups): the
// calls fill the row whole.
func (k *kernel) noiseRow(w, groups lanes, secure bool) *llvm.Func {
	name := fmt.Sprintf("%s_noise_row%d_%d_%v", k.Name, w, groups, secure)
	if f := funcNamed(k.m, name); f != nil {
		return f
	}
	params, d := helperDraw(secure, k.noise.host)
	f, b := newHelper(k.m, name, w.f32(), params...)
	per := d.block() * int64(groups)
	if int64(w)%per != 0 { // an emitter's mistake, which would return the row unwritten
		panic(fmt.Sprintf("llvmgen: a noise row of %d elements, not whole calls of %d", w, per))
	}
	row := llvm.NewAlloca(types.NewArray(uint64(int64(w)+per), f32)) // a call's more, for a row that starts inside a block
	row.Align = 4
	b.Insts = append(b.Insts, row)
	rowPtr, first := b.NewBitCast(row, f32Ptr), params[len(params)-1]
	off := b.NewAnd(first, i64c(d.block()-1)) // 0 where first starts a block
	calls := b.NewAdd(i64c(int64(w)/per), b.NewZExt(b.NewICmp(enum.IPredNE, off, i64c(0)), i64))
	b = k.drawBlocks(f, b, d, calls, groups, b.NewSub(first, off), rowPtr)
	b.NewRet(load(b, w.f32(), b.NewBitCast(b.NewGetElementPtr(f32, rowPtr, off), types.NewPointer(w.f32())), 4))
	return f
}

// drawBlocks stores at row the Gaussians of calls wide draws from first,
// which starts a block of d: the step's wide draws, gaussianC's 4·wide a
// call in the Philox scheme, secure.wide's 8·wide in the secure one, each
// in coordinate order.
func (k *kernel) drawBlocks(f *llvm.Func, b *llvm.Block, d *draw, calls value.Value, wide lanes, first, row value.Value) *llvm.Block {
	fn, per := k.noise.gaussianC[wide], d.block()*int64(wide)
	if d.secure() {
		fn = k.noise.secure.wide[wide]
	}
	vecs := int(d.block()) // a call's values, one vector of wide a block element
	return k.forLoop(f, b, "blocks", i64c(0), calls, i64c(1), func(b *llvm.Block, c value.Value) *llvm.Block {
		at := b.NewMul(c, i64c(per))
		z := d.call(b, fn, b.NewLShr(b.NewAdd(first, at), i64c(int64(bits.TrailingZeros64(uint64(d.block()))))))
		for v := range vecs {
			ptr := b.NewBitCast(b.NewGetElementPtr(f32, row, b.NewAdd(at, i64c(int64(v)*int64(wide)))), types.NewPointer(wide.f32()))
			store(b, b.NewExtractValue(z, uint64(v)), ptr, 4)
		}
		return b
	})
}

// paramValues is ps as values.
func paramValues(ps []*llvm.Param) []value.Value {
	out := make([]value.Value, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}
