package runtime

import (
	"cmp"
	"fmt"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// This file privatizes per-example gradients read where the trainer left
// them (docs/runtime.md, "Per-example clipping"): one segment per tensor,
// its k rows contiguous, instead of one [k][n] matrix. The norms add each
// tensor's terms to the lane accumulators of the chunks it lies in (the
// norms' piece host function, or reduce.PrivatizeNormsPiece), the sum runs
// per tensor; the bits are those of the matrix the segments tile.

// Segment is one tensor's per-example gradients, read in place:
// coordinates [Offset, Offset+Size) of every example, example ξ's at
// Cur[ξ·Size:(ξ+1)·Size], and Look's likewise for a two-point optimizer
// (nil for the others).
type Segment = reduce.Segment

// PrivatizeSegmentsTo is PrivatizeTo with the k examples' rows given as
// segments, which must tile [0, len(out)) in order (out nil: the
// optimizer's gradient buffer, as Privatize): the same bits, without
// gathering the rows into one matrix. Every segment holds k rows of its
// Size; Look is given in every segment or in none.
func (o *Optimizer) PrivatizeSegmentsTo(out []float32, segs []Segment, k int, scales []float32) (PrivatizeStats, error) {
	defer o.lock()()
	if o.opts.Backend.onDevice() {
		return PrivatizeStats{}, fmt.Errorf("runtime: PrivatizeSegmentsTo reads host memory; a %s optimizer privatizes with Privatize", o.Name())
	}
	j, err := o.segmentJob(out, segs, k)
	if err != nil || scales == nil {
		return o.runJob(j, err)
	}
	if err := o.takeScales(scales, j.Batch); err != nil {
		return PrivatizeStats{}, err
	}
	if bad := firstNonFiniteSegment(j.Segments, k); bad >= 0 {
		return PrivatizeStats{}, &NonFiniteExampleError{Example: bad}
	}
	j.Scales = scales
	return o.runPrivatize(j)
}

// segmentJob checks the segments against out (or the gradient buffer) and
// the DP settings, and returns the job reading them.
func (o *Optimizer) segmentJob(out []float32, segs []Segment, k int) (privJob, error) {
	j, err := o.privJob(nil, nil, out)
	if err != nil {
		return privJob{}, err
	}
	hasLook, err := checkSegments(segs, k, j.N)
	if err != nil {
		return privJob{}, err
	}
	sj, lookOnly, err := o.privShape(k, j.N, hasLook)
	if err != nil {
		return privJob{}, err
	}
	sj.Out = j.Out
	sj.Segments = o.segmentsRead(segs, sj.Mode, lookOnly)
	if i := overlapping(sj.Segments, o.destination(out)); i >= 0 {
		return privJob{}, fmt.Errorf("runtime: the rows of segment %d overlap the gradient they are privatized into", i)
	}
	return sj, nil
}

// destination is where a job with out writes: out, or the gradient
// buffer where out is nil.
func (o *Optimizer) destination(out []float32) []float32 {
	if out == nil {
		return o.bufs[ir.GradBuffer].F32
	}
	return out
}

// overlapping returns the first segment whose rows overlap out in
// memory, or -1: the sum writes out while it reads the rows of later
// coordinates.
func overlapping(segs []Segment, out []float32) int {
	dst := hostRange(out)
	for i, s := range segs {
		for _, rows := range [][]float32{s.Cur, s.Look} {
			if r := hostRange(rows); r.lo < dst.hi && dst.lo < r.hi {
				return i
			}
		}
	}
	return -1
}

// checkSegments checks that segs tile [0, n) in order, each with k rows of
// its size in cur and in look, given in every segment with rows or in
// none; it says whether look is given.
func checkSegments(segs []Segment, k, n int) (hasLook bool, _ error) {
	if k < 0 {
		return false, fmt.Errorf("runtime: %d examples", k)
	}
	at := 0
	for i, s := range segs {
		hasLook = hasLook || s.Look != nil
		switch {
		case s.Offset != at:
			return false, fmt.Errorf("runtime: segment %d starts at coordinate %d, want %d (segments tile the gradient in order, without overlap)", i, s.Offset, at)
		case s.Size < 0 || s.Size > n-at:
			return false, fmt.Errorf("runtime: segment %d of %d coordinates at %d passes the gradient's %d", i, s.Size, at, n)
		case len(s.Cur) != k*s.Size:
			return false, fmt.Errorf("runtime: segment %d holds %d values, want %d examples of %d", i, len(s.Cur), k, s.Size)
		}
		at += s.Size
	}
	if at != n {
		return false, fmt.Errorf("runtime: the segments cover %d coordinates of the gradient's %d", at, n)
	}
	return hasLook, checkLooks(segs, k, hasLook)
}

// checkLooks checks the segments' look rows: where any segment has them,
// every segment with rows holds k rows of its size.
func checkLooks(segs []Segment, k int, hasLook bool) error {
	for i, s := range segs {
		if hasLook && len(s.Look) != k*s.Size {
			return fmt.Errorf("runtime: segment %d holds %d look-ahead values, want %d examples of %d", i, len(s.Look), k, s.Size)
		}
	}
	return nil
}

// segmentsRead returns the segments as the job reads them (rowsRead's
// choice per segment), in a slice the optimizer keeps between calls.
func (o *Optimizer) segmentsRead(segs []Segment, mode uint32, lookOnly bool) []Segment {
	o.segs = append(o.segs[:0], segs...)
	for i, s := range o.segs {
		o.segs[i].Cur, o.segs[i].Look = rowsRead(backend.Privatize{Mode: mode}, lookOnly, s.Cur, s.Look)
	}
	return o.segs
}

// firstNonFiniteSegment is firstNonFiniteRow over the segments: the first
// example with a NaN or ±Inf in any segment's rows, or -1.
func firstNonFiniteSegment(segs []Segment, k int) int {
	bad := -1
	for _, s := range segs {
		if s.Size == 0 {
			continue
		}
		if x := firstNonFiniteRow(s.Size, s.Cur, s.Look); x >= 0 && (bad < 0 || x < bad) {
			bad = x
		}
	}
	return bad
}

// privatizeSegments runs j, whose rows are segments, on the host: the
// norms split over the examples, each read front to back, the scales, the
// sum split over the coordinates.
func (b *cpuBackend) privatizeSegments(j backend.Privatize) ([]float32, error) {
	args := privArgs(j)
	norms := func() error {
		acc, piece := b.lanesFor(32*reduce.ReduceChunks(j.N)*j.Batch), b.normsPiece(j)
		return b.split(j.Batch, ceilDiv(minThreadWork, j.N), func(lo, hi int) error {
			return reduce.SegmentNorms(args.Partials, acc, j.Segments, j.N, lo, hi, piece)
		})
	}
	switch {
	case j.NormsOnly: // the partials are read before the next privatization reuses them
		args.Partials = b.partialsFor(j.Batch * reduce.ReduceChunks(j.N))
		return args.Partials, norms()
	case args.Scales == nil && j.SegmentScales == nil:
		if err := b.clipScales(&args, j.Batch, norms); err != nil || j.ScalesOnly {
			return args.Scales, err
		}
	}
	err := b.split(j.N, max(4096, ceilDiv(minThreadWork, j.Batch)), func(lo, hi int) error { return b.segmentSum(j, args, lo, hi) })
	return args.Scales, err
}

// minThreadWork is the fewest floats of the rows that privatize gives a
// thread (2 MiB): a smaller share costs more in waking a thread, on a
// machine whose other cores are busy, than it saves.
const minThreadWork = 1 << 19

// ceilDiv is ⌈a/b⌉ for a ≥ 0, and a for b ≤ 0.
func ceilDiv(a, b int) int {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

// lanesFor returns n lane accumulators, those of the last privatization
// where they are enough.
func (b *cpuBackend) lanesFor(n int) []float32 {
	if cap(b.lanes) < n {
		b.lanes = make([]float32, n)
	}
	return b.lanes[:n]
}

// normsPiece is the norms' piece of j: the host function where the shared
// object has it, else the Go reference.
func (b *cpuBackend) normsPiece(j backend.Privatize) reduce.NormsPiece {
	return func(acc []float32, s reduce.Segment, first, accStride, lo, hi int) error {
		if b.priv == nil || !b.priv.HasPiece() {
			reduce.PrivatizeNormsPiece(acc, s.Cur, s.Look, rowStride(j, s), s.Size, first, accStride, j.A, j.B, lo, hi)
			return nil
		}
		return b.priv.NormsPiece(hostkernel.PieceArgs{Cur: s.Cur, Look: s.Look, Acc: acc, Stride: int64(rowStride(j, s)), N: int64(s.Size),
			First: int64(first), AccStride: int64(accStride), Lo: int64(lo), Hi: int64(hi), A: j.A, B: j.B, Mode: j.Mode})
	}
}

// rowStride is the distance between two examples' rows of segment s.
func rowStride(j backend.Privatize, s reduce.Segment) int {
	return cmp.Or(j.RowStride, s.Size)
}

// segmentSum stores the clipped sum of the coordinates [lo, hi), segment
// by segment, each read in place into its part of the destination.
func (b *cpuBackend) segmentSum(j backend.Privatize, a hostkernel.PrivatizeArgs, lo, hi int) error {
	for i, s := range j.Segments {
		from, to := max(lo, s.Offset), min(hi, s.Offset+s.Size)
		if from >= to {
			continue
		}
		if j.SegmentScales != nil {
			a.Scales = j.SegmentScales[i]
		}
		a.Cur, a.Look, a.Out, a.N = s.Cur, s.Look, j.Out[s.Offset:s.Offset+s.Size], int64(rowStride(j, s))
		if err := b.privPhase(2, a, from-s.Offset, to-s.Offset); err != nil {
			return err
		}
	}
	return nil
}
