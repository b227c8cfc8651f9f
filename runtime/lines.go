package runtime

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/backend"
)

// Rows and columns (docs/dsl.md, "Rows and columns"; decision 136): an
// optimizer with states per row or per column, or with row and column sums,
// steps each tensor with its shape. A tensor registered with a shape
// (RegisterShaped) has all but its last dimension as rows; a tensor
// registered without one, and the coordinates between tensors, are one
// row. The runtime keeps each tensor's line states in host memory; a
// tensor's start at their initial values at its first step that runs, with
// the hypers it steps with. Backend Go runs them (the interpreter computes the row and
// column sums, the host part and the step); the host kernel and the PTX do
// not compute them yet, and Open refuses the other backends.

// linesKey is a tensor's range [lo, hi) of the buffers: the key of its line
// states, a registered tensor's or a gap's.
type linesKey struct{ lo, hi int }

// tensorLines are a tensor's line states (Func.LineStates order) and the
// shape they are of.
type tensorLines struct {
	shape  interp.Shape
	states [][]float32
}

// RegisterShaped is Register for a tensor of the given shape (its
// dimensions, row-major, as PyTorch's size()): all dimensions but the last
// are its rows, the last its columns, which states per row or per column
// and row and column sums read (an optimizer without them steps it as
// Register's). A shape of one dimension is one row.
func (o *Optimizer) RegisterShaped(name string, params []float32, shape ...int) (*Tensor, error) {
	if err := checkShape(shape, len(params)); err != nil {
		return nil, fmt.Errorf("runtime: register %s: %w", name, err)
	}
	t, err := o.Register(name, params)
	if err == nil {
		t.shape = slices.Clone(shape)
	}
	return t, err
}

// SetShape gives the tensor a shape, as RegisterShaped does: a range of
// the trainer's buffers (RegisterRange) takes its shape so. A tensor's
// shape is fixed once it has line states — from its first step, or from a
// checkpoint loaded — and by any step.
func (t *Tensor) SetShape(shape ...int) error {
	defer t.o.lock()()
	if _, ok := t.o.lines[t.key()]; ok || t.o.t > 0 {
		return fmt.Errorf("runtime: tensor %s: a shape is given before the optimizer steps (or loads a checkpoint of line states)", t.Name)
	}
	if err := checkShape(shape, t.Len); err != nil {
		return fmt.Errorf("runtime: tensor %s: %w", t.Name, err)
	}
	t.shape = slices.Clone(shape)
	return nil
}

// Shape is the tensor's dimensions: RegisterShaped's or SetShape's, or
// Register's one dimension.
func (t *Tensor) Shape() []int {
	defer t.o.lock()()
	return slices.Clone(t.dims())
}

// key is the key of the tensor's line states.
func (t *Tensor) key() linesKey { return linesKey{t.Offset, t.Offset + t.Len} }

// checkShape refuses a shape that does not hold n values.
func checkShape(shape []int, n int) error {
	rows, cols, err := rowsCols(shape)
	if err == nil && rows*cols != n {
		err = fmt.Errorf("a tensor of shape %v holds %d values, got %d", shape, rows*cols, n)
	}
	return err
}

// dims is the tensor's shape: RegisterShaped's, or Register's one
// dimension.
func (t *Tensor) dims() []int {
	if t.shape == nil {
		return []int{t.Len}
	}
	return t.shape
}

// rowsCols are the rows and columns of a tensor of shape: the product of
// all dimensions but the last, and the last.
func rowsCols(shape []int) (rows, cols int, err error) {
	if len(shape) == 0 {
		return 0, 0, fmt.Errorf("a shape needs a dimension at least")
	}
	rows, n := 1, 1 // n: the product so far, checked not to wrap
	for i, d := range shape {
		switch {
		case d < 0:
			return 0, 0, fmt.Errorf("dimension %d of shape %v is negative", i, shape)
		case d != 0 && n > math.MaxInt/d:
			return 0, 0, fmt.Errorf("shape %v holds more values than an int counts", shape)
		}
		if n *= d; i < len(shape)-1 {
			rows = n
		}
	}
	return rows, shape[len(shape)-1], nil
}

// lineShape is the shape of n coordinates registered with shape: n of one
// row without one.
func lineShape(shape []int, n int) interp.Shape {
	if rows, cols, err := rowsCols(shape); err == nil && rows*cols == n {
		return interp.Shape{Rows: rows, Cols: cols}
	}
	return interp.Shape{Rows: 1, Cols: n}
}

// stepsPerTensor reports whether the host part of a step reads each
// tensor's own values: its reductions, its shape or its line states.
func (o *Optimizer) stepsPerTensor() bool {
	return o.prog.Func.Reduce != nil || o.prog.Func.HasLines()
}

// checkLinesBackend refuses a backend that cannot step line states.
func checkLinesBackend(fn *ir.Func, b Backend) error {
	if !fn.HasLines() || b == Go {
		return nil
	}
	return fmt.Errorf("runtime: %s has states per row or per column, which only Backend go (the reference) runs yet: "+
		"the host kernel and the PTX do not compute them (docs/dsl.md, \"Rows and columns\")", fn.Name)
}

// linesReduced is reduced for an optimizer with line values: each tensor's
// reductions, row and column sums computed on the host from its buffers
// (g privatized as the step privatizes it), with its shape and line states
// given to its host part.
func (o *Optimizer) linesReduced(a backend.Step) (backend.Step, error) {
	o.linesMade = nil // a refused step's
	noise := o.noiseRanges(a.Segments[len(a.Segments)-1].Hi, a.Offset)
	ts := o.reduceTensors(a, noise)
	g := o.keepPrivatized(&a, ts) // before a is read again: it sets a.Kept and turns the step's draw off
	reds, err := o.reduceAll(a, ts, g)
	if err != nil {
		return a, err
	}
	var segs []backend.Segment
	for i, t := range ts {
		red := reds[i]
		if red.LineStates, err = o.linesOf(t, red.Shape); err != nil {
			return a, fmt.Errorf("runtime: tensor %s: %w", t.name, err)
		}
		seg, err := o.tensorSegment(t, red)
		if err != nil {
			return a, err
		}
		segs = append(segs, seg)
	}
	a.Segments = segs
	return a, nil
}

// reduceAll computes each tensor's reductions and row and column sums over
// its buffers, with g for the gradient (keepPrivatized), every tensor's
// pieces of whole chunks on every thread, as the reduction pass runs them:
// each one's Reduced, with its shape (and only that where the step reads
// no reduction).
func (o *Optimizer) reduceAll(a backend.Step, ts []reduceTensor, g []float32) ([]*interp.Reduced, error) {
	reds := make([]*interp.Reduced, len(ts))
	if o.prog.Func.Reduce == nil {
		for i, t := range ts {
			reds[i] = &interp.Reduced{Numel: t.hi - t.lo, Shape: lineShape(t.shape, t.hi-t.lo)}
		}
		return reds, nil
	}
	parts, vals := make([][][]float32, len(ts)), make([][][]float32, len(ts))
	var work []func() error
	for i, t := range ts {
		parts[i], vals[i] = o.prog.ShapedPartials(t.hi - t.lo)
		work = append(work, o.reducePieces(a, t, g, parts[i], vals[i])...)
	}
	if err := runLimited(work, o.opts.threads()); err != nil {
		return nil, err
	}
	for i, t := range ts {
		reds[i] = o.prog.FinishShaped(parts[i], vals[i], lineShape(t.shape, t.hi-t.lo))
	}
	return reds, nil
}

// reducePieces is the work of tensor t's reductions into its partials and
// line terms' values, in pieces of whole chunks, one per thread.
func (o *Optimizer) reducePieces(a backend.Step, t reduceTensor, g []float32, parts, vals [][]float32) []func() error {
	n := t.hi - t.lo
	chunks, threads := reduce.ReduceChunks(n), o.opts.threads()
	scalars := o.prog.ReduceScalars(t.hypers, o.t, t.sigmaW2)
	return chunkWork(chunks, max((chunks+threads-1)/threads, 1), func(lo, hi int) error {
		start, end := t.lo+lo*reduce.ReduceChunk, t.lo+min(hi*reduce.ReduceChunk, n)
		bufs := widenRange(o.bufs, start, end)
		bufs[ir.GradBuffer] = g[start:end]
		part, val := make([][]float32, len(parts)), make([][]float32, len(vals))
		for k := range parts {
			part[k] = parts[k][lo:hi]
			if vals[k] != nil {
				val[k] = vals[k][start-t.lo : end-t.lo]
			}
		}
		nz := &interp.Noise{Stream: a.Noise, SigmaW: rng.SigmaW(t.sigmaW2), Offset: uint64(a.Offset) + uint64(start)}
		if err := o.prog.ReduceValues(scalars, nz, bufs, part, val); err != nil {
			return fmt.Errorf("runtime: tensor %s: %w", t.name, err)
		}
		return nil
	})
}

// keepPrivatized draws the noise of step a into the gradient once, on
// every thread, into the Go backend's kept gradient, which the reductions
// and then the step read (a.Kept: the step draws none; decision 127), and
// returns that gradient; the gradient buffer where a draws none, where a
// noise block draws it in the step, or where no reduction reads it.
func (o *Optimizer) keepPrivatized(a *backend.Step, ts []reduceTensor) []float32 {
	g := o.bufs[ir.GradBuffer].F32
	b, ok := o.back.(*cpuBackend)
	if !ok || a.Noise.Mode == rng.Off || o.prog.Func.Noise != nil || o.prog.Func.Reduce == nil {
		return g
	}
	b.kept.Passing()
	if len(b.kept.Buf) != len(g) {
		b.kept.Buf = make([]float32, len(g))
	}
	nz, kept := a.Noise, b.kept.Buf
	var work []func() error
	for _, t := range ts {
		sigma := rng.SigmaW(t.sigmaW2)
		for _, c := range segmentChunks(t.lo, t.hi, b.threads, goPiece) {
			work = append(work, func() error {
				nz.Privatize(kept[c[0]:c[1]], g[c[0]:c[1]], sigma, uint64(a.Offset)+uint64(c[0]))
				return nil
			})
		}
	}
	runLimited(work, max(b.threads, 1)) // the work returns no error
	b.kept.Passed(true)
	a.Kept, a.Noise.Mode = true, rng.Off
	return kept
}

// linesOf returns tensor t's line states, made at their initial values at
// its first step.
func (o *Optimizer) linesOf(t reduceTensor, shape interp.Shape) ([][]float32, error) {
	key := linesKey{t.lo, t.hi}
	if tl, ok := o.lines[key]; ok {
		if tl.shape != shape { // SetShape refuses it: a guard
			return nil, fmt.Errorf("its line states are of %d × %d, its shape %d × %d", tl.shape.Rows, tl.shape.Cols, shape.Rows, shape.Cols)
		}
		return tl.states, nil
	}
	ls, err := o.newLines(shape, t.hypers)
	if err != nil {
		return nil, err
	}
	if o.linesMade == nil {
		o.linesMade = map[linesKey]*tensorLines{}
	}
	o.linesMade[key] = &tensorLines{shape, ls} // the optimizer's once the step runs (commitLines)
	return ls, nil
}

// newLines are the line states of a tensor of shape at their initial
// values for hypers h.
func (o *Optimizer) newLines(shape interp.Shape, h []float64) ([][]float32, error) {
	ls := make([][]float32, len(o.prog.Func.LineStates))
	for i, s := range o.prog.Func.LineStates {
		ls[i] = make([]float32, shape.Len(s.Axis))
	}
	return ls, o.prog.InitLines(h, ls)
}

// commitLines writes the line states' new values of step a, which ran,
// and keeps the line states it made.
func (o *Optimizer) commitLines(a backend.Step) {
	for _, s := range a.Segments {
		s.Host.CommitLines()
	}
	if o.lines == nil && o.linesMade != nil {
		o.lines = map[linesKey]*tensorLines{}
	}
	maps.Copy(o.lines, o.linesMade)
	o.linesMade = nil
}

// lineState is a copy of the tensor's line state k: one value per row or
// column, its initial values before its first step.
func (t *Tensor) lineState(k int) ([]float32, error) {
	if tl, ok := t.o.lines[t.key()]; ok {
		return slices.Clone(tl.states[k]), nil
	}
	ls, err := t.o.newLines(lineShape(t.shape, t.Len), t.setting())
	if err != nil {
		return nil, err
	}
	return ls[k], nil
}

// LineState is a state per row or per column: its name, and its axis,
// "rows" or "cols".
type LineState struct {
	Name string `json:"name"`
	Axis string `json:"axis"`
}

// LineStates are the optimizer's states per row or per column, in the
// manifest's order; none without any.
func (o *Optimizer) LineStates() []LineState {
	var out []LineState
	for _, s := range o.prog.Func.LineStates {
		out = append(out, LineState{s.Name, s.Axis.String()})
	}
	return out
}

// ReadsLines reports whether a step reads each tensor's rows and columns
// (states per row or per column, row or column sums): each tensor then
// steps with its shape (RegisterShaped, SetShape), on Backend go.
func (o *Optimizer) ReadsLines() bool { return o.prog.Func.HasLines() }
