package runtime

import (
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// Per-tensor reductions (docs/runtime.md, "Reductions"): the step of an
// optimizer whose DSL reads norm, sum, mean, max or min runs in two passes
// over each tensor. The backend's reduction pass computes each term's chunk
// partials from the buffers before the step, g privatized as the step will
// privatize it; the host finishes them in chunk order (interp.Program.Finish:
// a sum in float64, a max or min), computes
// the tensor's host scalars from them, and the step runs with those, one
// segment per tensor. The tensors are the registered ones; an optimizer
// without any is one tensor.

// reduced returns the step a with its segments cut at the tensors, each
// with the scalars of its reductions over m; a as it is for an optimizer
// without reductions. A host scalar that is not finite for some tensor
// (a norm of 0 divided by) refuses the step with nothing changed.
func (o *Optimizer) reduced(m backend.Memory, a backend.Step) (backend.Step, error) {
	if o.prog.Func.HasLines() {
		return o.linesReduced(a)
	}
	if o.prog.Func.Reduce == nil {
		return a, nil
	}
	noise := o.noiseRanges(a.Segments[len(a.Segments)-1].Hi, a.Offset)
	ts := o.reduceTensors(a, noise)
	r := o.reduceEntry(a, ts)
	if len(o.red.partials) < r.Len() {
		o.red.partials = make([]float32, r.Len())
	}
	partials := o.red.partials[:r.Len()] // the backend sets every one
	if err := o.back.Reduce(m, r, partials); err != nil {
		return a, fmt.Errorf("runtime: the reduction pass: %w", err)
	}
	var segs []backend.Segment
	for i, part := range r.Split(partials) {
		t, n := ts[i], ts[i].hi-ts[i].lo
		seg, err := o.tensorSegment(t, o.prog.Finish(termRows(part, reduce.ReduceChunks(n)), n))
		if err != nil {
			return a, err
		}
		segs = append(segs, seg)
	}
	a.Segments = segs
	if r.Keep { // the step reads the gradient the pass privatized: the noise is drawn once
		a.Kept, a.Noise.Mode = true, rng.Off
	}
	return a, nil
}

// reduceState is what an optimizer with reductions keeps between steps.
type reduceState struct {
	readsGrad bool      // ir.Func.ReduceReadsGradient: the pass privatizes g, and keeps it
	partials  []float32 // the last pass's partials, reused by the next
}

// reduceTensor is the coordinates [lo, hi) of one tensor, its hypers and
// its noise variance.
type reduceTensor struct {
	name    string
	lo, hi  int
	hypers  []float64
	sigmaW2 float64
	shape   []int // Tensor.Shape; nil: one row
}

// reduceTensors lists the tensors the segments of a cover, in order: the
// registered tensors, and the coordinates between them (a whole buffer
// without any) as tensors of their own, cut where the noise's variance
// changes (a registered tensor lies in one clip group: checkGroupLayout).
func (o *Optimizer) reduceTensors(a backend.Step, noise []noiseRange) []reduceTensor {
	lo, hi := a.Segments[0].Lo, a.Segments[len(a.Segments)-1].Hi
	var out []reduceTensor
	gap := func(to int) {
		for _, r := range noise {
			if from, end := max(lo, r.lo), min(to, r.hi); from < end {
				out = append(out, reduceTensor{name: fmt.Sprintf("[%d, %d)", from, end), lo: from, hi: end, hypers: o.hypers, sigmaW2: r.sigmaW2})
			}
		}
	}
	for _, t := range o.tensors {
		if t.Len == 0 || t.Offset < lo || t.Offset+t.Len > hi {
			continue
		}
		gap(t.Offset)
		out = append(out, reduceTensor{name: t.Name, lo: t.Offset, hi: t.Offset + t.Len, hypers: t.setting(), sigmaW2: sigmaW2At(noise, t.Offset), shape: t.shape})
		lo = t.Offset + t.Len
	}
	gap(hi)
	return out
}

// reduceEntry is the reduction pass of step a over the tensors ts, each
// with the scalars of its hypers, computed once for each distinct setting
// (a parameter group's tensors share theirs).
func (o *Optimizer) reduceEntry(a backend.Step, ts []reduceTensor) backend.Reduce {
	r := backend.Reduce{Reference: o.prog, Terms: o.prog.Func.NumReductions(), Noise: a.Noise, Offset: a.Offset,
		Keep: a.Noise.Mode != rng.Off && o.red.readsGrad}
	if k := o.m.Kernels.Reduce; k != nil {
		r.Kernel, r.HostFunction = k.Kernel, k.HostFunction
	}
	var firsts []int // the first tensor of each distinct setting
	for i, t := range ts {
		rt := backend.ReduceTensor{Lo: t.lo, Hi: t.hi}
		if j := slices.IndexFunc(firsts, func(f int) bool { return slices.Equal(ts[f].hypers, t.hypers) && ts[f].sigmaW2 == t.sigmaW2 }); j >= 0 {
			rt.Scalars = r.Tensors[firsts[j]].Scalars
		} else {
			rt.Scalars, firsts = o.prog.ReduceScalars(t.hypers, o.t, t.sigmaW2), append(firsts, i)
		}
		r.Tensors = append(r.Tensors, rt)
	}
	return r
}

// termRows splits term-major partials into one slice per term.
func termRows(partials []float32, chunks int) [][]float32 {
	var out [][]float32
	for i := 0; i < len(partials); i += max(chunks, 1) {
		out = append(out, partials[i:i+chunks])
	}
	return out
}

// tensorSegment is the step's segment over tensor t, with the host
// scalars of its reductions red (and, with lines, its shape and line
// states), or the error of one that is not finite (checkReduced).
func (o *Optimizer) tensorSegment(t reduceTensor, red *interp.Reduced) (backend.Segment, error) {
	host := o.prog.HostScalarsReduced(t.hypers, o.t, t.sigmaW2, red)
	seg := backend.Segment{Lo: t.lo, Hi: t.hi, Host: host, Scalars: o.prog.KernelScalars(host, t.sigmaW2)}
	return seg, o.checkReduced(t, seg)
}

// checkReduced refuses a segment whose host scalars are not all finite;
// the scalars' expressions are looked up only for the message.
func (o *Optimizer) checkReduced(t reduceTensor, seg backend.Segment) error {
	for i, x := range seg.Scalars {
		if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) {
			continue
		}
		return fmt.Errorf("runtime: step %d of tensor %s: "+ir.NonFiniteHostFormat(i, ir.ExprString(ir.HostScalars(o.prog.Func.Step)[i])), o.t, t.name, x)
	}
	return nil
}

// Reduce runs the reduction pass over each tensor on every core: with the
// host function where the shared object is loaded, else with the
// interpreter. Each tensor's chunks are cut into at most as many pieces as
// threads, and the pieces of every tensor run together, so that a model of
// many small tensors uses every core; a piece takes whole chunks, so the
// split does not change a bit.
func (b *cpuBackend) Reduce(m backend.Memory, r backend.Reduce, partials []float32) error {
	if err := b.host(m); err != nil {
		return err
	}
	host, err := b.reducePass(r)
	if err != nil {
		return err
	}
	b.kept.Passing()
	if n := b.bufs[ir.GradBuffer].Len(); r.Keep && len(b.kept.Buf) != n {
		b.kept.Buf = make([]float32, n)
	}
	var work []func() error
	for i, part := range r.Split(partials) {
		var kept []float32
		if t := r.Tensors[i]; r.Keep {
			kept = b.kept.Buf[t.Lo:t.Hi]
		}
		work = append(work, b.reduceTensor(host, r, r.Tensors[i], part, kept)...)
	}
	if err := runLimited(work, max(b.threads, 1)); err != nil {
		return err
	}
	b.kept.Passed(r.Keep)
	return nil
}

// reduceTensor is the work of the reduction pass over tensor t into its
// partials, keeping its privatized g in kept (nil: not kept), in pieces of
// whole chunks: with the host function host, else (nil) with the
// interpreter.
func (b *cpuBackend) reduceTensor(host *hostkernel.Reduce, r backend.Reduce, t backend.ReduceTensor, partials, kept []float32) []func() error {
	bufs := make([]backend.Host, len(b.bufs))
	for i, buf := range b.bufs {
		bufs[i] = buf.Slice(t.Lo, t.Hi)
	}
	n := t.Hi - t.Lo
	chunks := reduce.ReduceChunks(n)
	per, rows := max((chunks+b.threads-1)/b.threads, 1), termRows(partials, chunks)
	nz, offset := r.Noise, r.Offset+int64(t.Lo)
	return chunkWork(chunks, per, func(lo, hi int) error {
		if host != nil {
			rg := hostkernel.Range{Lo: int64(lo), Hi: int64(hi), Offset: offset, Seed: nz.Seed, Step: nz.Step, Noise: uint32(nz.Mode), Key: nz.Key}
			return host.RunHost(bufs, t.Scalars, n, rg, partials, kept)
		}
		start, end := lo*reduce.ReduceChunk, min(hi*reduce.ReduceChunk, n)
		part := make([][]float32, len(rows))
		for i, row := range rows {
			part[i] = row[lo:hi]
		}
		sub := widenRange(bufs, start, end)
		in := &interp.Noise{Stream: nz, SigmaW: t.Scalars[len(t.Scalars)-1], Offset: uint64(offset) + uint64(start)}
		var keep []float32
		if kept != nil {
			keep = kept[start:end]
		}
		return r.Reference.ReducePartials(t.Scalars, in, sub, part, keep)
	})
}

// reducePass returns the reduction pass's host function, loaded from the
// shared object at its first use; nil without one (the reference runs).
func (b *cpuBackend) reducePass(r backend.Reduce) (*hostkernel.Reduce, error) {
	if b.kernel == nil || r.HostFunction == "" {
		return nil, nil
	}
	if b.reduce != nil {
		return b.reduce, nil
	}
	h, err := hostkernel.OpenReduce(b.so, r.HostFunction, b.kernel.NumBuffers, len(ir.HostScalars(b.prog.Func.Reduce))+1, r.Terms)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	b.reduce = h
	return h, nil
}
