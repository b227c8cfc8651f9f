package llvmgen

import (
	"math"
	"slices"

	"github.com/fibergen/fibergen/manifest"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file emits the privatize kernels (docs/kernels.md, "Privatize"):
// per-example clipping of the gradients u = cur (mode 0) or
// u = a·look + b·cur (mode 1), in three phases — the chunked squared norms
// (the reduction of reduce.go), the per-example scales
// min(1, C/sqrt(norm²)) in float64, and the clipped sum over the divisor
// Σ_ξ scale_ξ·u_ξ / d (d the expected batch size, whatever the number of
// examples) — each as an NVPTX kernel <name>_privatize_<phase>
// and a host function <name>_privatize_<phase>_cpu with its AVX2 and
// AVX-512 twins.

// PrivatizePhases are the privatize kernels in the order they run.
var PrivatizePhases = []string{"norms", "scales", "sum"}

// PrivatizeKernel is the NVPTX kernel of a phase, e.g. fiber_privatize_norms.
func (k *Module) PrivatizeKernel(phase string) string { return k.Name + "_privatize_" + phase }

// PrivatizeHostFunc is the host function of a phase, e.g.
// fiber_privatize_norms_cpu; its AVX2 and AVX-512 twins add _avx2 and
// _avx512.
func (k *Module) PrivatizeHostFunc(phase string) string { return k.PrivatizeKernel(phase) + hostSuffix }

// privatizeSignature is the NVPTX kernel of a phase:
//
//	<name>_privatize_norms(float *cur, float *look, float *partials, u64 batch, u64 n, float a, float b, u32 mode)
//	<name>_privatize_scales(float *partials, float *scales, u64 batch, u64 nchunks, f64 clip)
//	<name>_privatize_sum(float *cur, float *look, float *scales, float *out,
//	                     u64 batch, u64 n, float a, float b, float divisor, u32 mode)
//
// the pointers noalias, readonly where the phase only reads.
func (k *kernel) privatizeSignature(phase string) signature {
	row := func(name string, readonly bool) cparam { return param(name, cFloatPtr).noalias(readonly) }
	mix := []cparam{param("batch", cU64), param("n", cU64), param("a", cFloat), param("b", cFloat)}
	var ps []cparam
	switch phase {
	case "norms":
		ps = slices.Concat([]cparam{row("cur", true), row("look", true), row("partials", false)}, mix, []cparam{param("mode", cU32)})
	case "scales":
		ps = []cparam{row("partials", true), row("scales", false), param("batch", cU64), param("nchunks", cU64), param("clip", cF64)}
	case "sum":
		ps = slices.Concat([]cparam{row("cur", true), row("look", true), row("scales", true), row("out", false)}, mix,
			[]cparam{param("divisor", cFloat), param("mode", cU32)})
	}
	return signature{symbol: k.PrivatizeKernel(phase), kernel: true, params: ps}
}

// newPrivatizeKernel adds the kernel of a phase and records it for the
// manifest.
func (k *kernel) newPrivatizeKernel(phase string) (*llvm.Func, *llvm.Block) {
	sig := k.privatizeSignature(phase)
	k.Kernels.Privatize.Kernels = append(k.Kernels.Privatize.Kernels, sig.symbol)
	k.Kernels.Privatize.KernelABIs = append(k.Kernels.Privatize.KernelABIs, sig.String())
	return k.newEntry(sig, sig.symbol)
}

// privArgs are the values the privatize code reads.
type privArgs struct {
	cur, look, partials, scales, out value.Value
	batch, n, lo, hi, clip, a, b     value.Value
	divisor, mode                    value.Value
}

// inputs returns the rows a mode reads: [look, cur] for mode 1 (two
// sets), [cur] for mode 0.
func (p privArgs) inputs(two bool) []value.Value {
	if two {
		return []value.Value{p.look, p.cur}
	}
	return []value.Value{p.cur}
}

// mix emits u from the values in of the inputs: cur, or a·look + b·cur
// (each product rounded, no contraction).
func (p privArgs) mix(b *llvm.Block, w lanes, in []value.Value) value.Value {
	if len(in) == 1 {
		return in[0]
	}
	return b.NewFAdd(b.NewFMul(broadcast(b, w, p.a), in[0]), b.NewFMul(broadcast(b, w, p.b), in[1]))
}

// norms is the reduction of the squared norms: the one term u·u.
func (p privArgs) norms(two bool) reduction {
	return reduction{inputs: len(p.inputs(two)), sums: 1, terms: func(b *llvm.Block, w lanes, in []value.Value) []value.Value {
		u := p.mix(b, w, in)
		return []value.Value{b.NewFMul(u, u)}
	}}
}

// emitPrivatize emits the three kernels and the three host functions.
func (k *kernel) emitPrivatize() {
	k.Kernels.Privatize = &manifest.Privatize{Chunk: ReduceChunk, TwoSets: k.fn.Observe != nil && k.fn.Observe.Kind == "two_point"}
	k.emitNormsKernel()
	k.emitScalesKernel()
	k.emitSumKernel()
	k.emitPrivatizeHost()
}

// byMode branches on mode != 0 and emits body for mode 1 (two sets) and
// mode 0 (one set); each returns the block it ends in, which returns.
func (k *kernel) byMode(f *llvm.Func, b *llvm.Block, mode value.Value, body func(b *llvm.Block, two bool) *llvm.Block) {
	two, one := f.NewBlock("two_sets"), f.NewBlock("one_set")
	b.NewCondBr(b.NewICmp(enum.IPredNE, mode, i32c(0)), two, one)
	body(two, true).NewRet(nil)
	body(one, false).NewRet(nil)
}

// emitNormsKernel emits the norms kernel (privatizeSignature): one warp
// per (example, chunk) task, grid-stride.
func (k *kernel) emitNormsKernel() {
	f, b := k.newPrivatizeKernel("norms")
	ps := f.Params
	cur, look, partials, batch, n, a, bb, mode := ps[0], ps[1], ps[2], ps[3], ps[4], ps[5], ps[6], ps[7]
	p := privArgs{cur: cur, look: look, a: a, b: bb}
	k.byMode(f, b, mode, func(b *llvm.Block, two bool) *llvm.Block {
		return k.warpReduce(f, b, p.norms(two), p.inputs(two), []value.Value{partials}, batch, n)
	})
}

// emitScalesKernel emits the scales kernel (privatizeSignature): one
// thread per example, grid-stride.
func (k *kernel) emitScalesKernel() {
	f, b := k.newPrivatizeKernel("scales")
	partials, scales, batch, nchunks, clip := f.Params[0], f.Params[1], f.Params[2], f.Params[3], f.Params[4]
	tid, stride := k.threadIndex(b)
	k.forLoop(f, b, "example", tid, batch, stride, func(b *llvm.Block, x value.Value) *llvm.Block {
		return k.exampleScale(f, b, partials, scales, x, nchunks, clip)
	}).NewRet(nil)
}

// exampleScale emits scales[x] = float32(min(1, C/sqrt(norm²))), norm² the
// float64 sum of the partials of example x in chunk order (1 where norm² is
// 0, NaN where it is not finite).
func (k *kernel) exampleScale(f *llvm.Func, b *llvm.Block, partials, scales, x, nchunks, clip value.Value) *llvm.Block {
	row := b.NewGetElementPtr(f32, partials, b.NewMul(x, nchunks))
	f64 := types.Double
	b, sum := k.loopCarry(f, b, "chunk", i64c(0), nchunks, i64c(1), []value.Value{constant.NewFloat(f64, 0)},
		func(b *llvm.Block, c value.Value, s []value.Value) (*llvm.Block, []value.Value) {
			return b, []value.Value{b.NewFAdd(s[0], b.NewFPExt(load(b, f32, b.NewGetElementPtr(f32, row, c), 4), f64))}
		})
	norm2, one := sum[0], constant.NewFloat(f64, 1)
	q := b.NewFDiv(clip, b.NewCall(intrinsic(k.m, "llvm.sqrt.f64", f64, f64), norm2))
	s := b.NewSelect(b.NewFCmp(enum.FPredOLT, q, one), q, one)
	s = b.NewSelect(b.NewFCmp(enum.FPredOEQ, norm2, constant.NewFloat(f64, 0)), one, s)
	bad := b.NewFCmp(enum.FPredUGE, norm2, constant.NewFloat(f64, math.Inf(1)))
	s32 := b.NewSelect(bad, constant.NewFloat(f32, math.NaN()), b.NewFPTrunc(s, f32))
	store(b, s32, b.NewGetElementPtr(f32, scales, x), 4)
	return b
}

// emitSumKernel emits the sum kernel (privatizeSignature): a grid-stride
// loop over the groups of four coordinates (128-bit loads and stores when
// every row and out are 16-byte aligned), then over the tail.
func (k *kernel) emitSumKernel() {
	f, b := k.newPrivatizeKernel("sum")
	ps := f.Params
	cur, look, scales, out, batch, n, a, bb, divisor, mode := ps[0], ps[1], ps[2], ps[3], ps[4], ps[5], ps[6], ps[7], ps[8], ps[9]
	p := privArgs{cur: cur, look: look, scales: scales, out: out, batch: batch, n: n, a: a, b: bb, divisor: divisor}
	k.byMode(f, b, mode, func(b *llvm.Block, two bool) *llvm.Block {
		return k.sumGrid(f, b, p, two)
	})
}

// sumGrid emits the sum kernel's loops for one mode.
func (k *kernel) sumGrid(f *llvm.Func, b *llvm.Block, p privArgs, two bool) *llvm.Block {
	tid, stride := k.threadIndex(b)
	ins := p.inputs(two)
	groups, tail := b.NewAShr(p.n, i64c(2)), b.NewAnd(p.n, i64c(3))
	nAligned := b.NewICmp(enum.IPredEQ, tail, i64c(0))
	aligned := b.NewAnd(nAligned, k.aligned(b, append(append([]value.Value(nil), ins...), p.out), i64c(0)))
	vec, scalar, edge := f.NewBlock(k.label("vector")), f.NewBlock(k.label("scalar")), f.NewBlock(k.label("tail"))
	b.NewCondBr(aligned, vec, scalar)
	for _, v := range []struct {
		b   *llvm.Block
		vec bool
	}{{vec, true}, {scalar, false}} {
		k.forLoop(f, v.b, "group", tid, groups, stride, func(b *llvm.Block, j value.Value) *llvm.Block {
			return k.sumAt(f, b, p, ins, b.NewShl(j, i64c(2)), 4, v.vec)
		}).NewBr(edge)
	}
	start := edge.NewShl(groups, i64c(2))
	return k.forLoop(f, edge, "edge", tid, tail, stride, func(b *llvm.Block, e value.Value) *llvm.Block {
		return k.sumAt(f, b, p, ins, b.NewAdd(start, e), 1, false)
	})
}

// sumAt emits out[i..i+w) = (Σ_ξ scales[ξ]·u_ξ[i..i+w)) / divisor, the
// sum from +0 in example order over the batch examples given (+0 for none);
// aligned: 128-bit accesses.
func (k *kernel) sumAt(f *llvm.Func, b *llvm.Block, p privArgs, ins []value.Value, i value.Value, w lanes, aligned bool) *llvm.Block {
	b, acc := k.loopCarry(f, b, "example", i64c(0), p.batch, i64c(1), []value.Value{zero(w)},
		func(b *llvm.Block, x value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
			at := b.NewAdd(b.NewMul(x, p.n), i)
			var in []value.Value
			for _, ptr := range ins {
				in = append(in, loadLanes(b, b.NewGetElementPtr(f32, ptr, at), w, aligned))
			}
			s := broadcast(b, w, load(b, f32, b.NewGetElementPtr(f32, p.scales, x), 4))
			return b, []value.Value{b.NewFAdd(acc[0], b.NewFMul(s, p.mix(b, w, in)))}
		})
	mean := b.NewFDiv(acc[0], broadcast(b, w, p.divisor))
	storeLanes(b, mean, b.NewGetElementPtr(f32, p.out, i), w, aligned)
	return b
}

// loadLanes loads w floats at ptr as one vector (16-byte aligned if
// aligned), or one float for w 1.
func loadLanes(b *llvm.Block, ptr value.Value, w lanes, aligned bool) value.Value {
	if w == 1 {
		return load(b, f32, ptr, 4)
	}
	align := 4
	if aligned {
		align = 16
	}
	return load(b, w.f32(), b.NewBitCast(ptr, types.NewPointer(w.f32())), align)
}

// storeLanes is loadLanes' store.
func storeLanes(b *llvm.Block, x, ptr value.Value, w lanes, aligned bool) {
	if w == 1 {
		store(b, x, ptr, 4)
		return
	}
	align := 4
	if aligned {
		align = 16
	}
	store(b, x, b.NewBitCast(ptr, types.NewPointer(w.f32())), align)
}
