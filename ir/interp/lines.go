package interp

import (
	"fmt"
	"math"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/reduce"
)

// Lines: line values and line states (ir/lines.go; docs/dsl.md, "Rows and
// columns"). The host part computes a line value as a vector of float64,
// one per row (column) of the tensor, and the new values of the line
// states, which Step stores after the kernel has run; the kernel reads a
// line value, rounded to float32, at the row (column) of each coordinate.

// Shape is a tensor's rows and columns, row-major: coordinate i is in row
// i / Cols and column i % Cols. A 1-D tensor of n coordinates is {1, n}.
type Shape struct{ Rows, Cols int }

// Len is the number of lines along axis: Rows for lang.Rows, Cols for
// lang.Cols.
func (s Shape) Len(axis lang.Axis) int {
	if axis == lang.Rows {
		return s.Rows
	}
	return s.Cols
}

// holds reports coordinates off..off+n that a tensor of shape s does not
// hold, for optimizer name.
func (s Shape) holds(name string, off, n int) error {
	if s.Rows < 1 || s.Cols < 1 || off < 0 || off+n > s.Rows*s.Cols {
		return fmt.Errorf("%s: coordinates %d..%d are not in a tensor of %d × %d", name, off, off+n, s.Rows, s.Cols)
	}
	return nil
}

// line is the line along axis of coordinate i.
func (s Shape) line(axis lang.Axis, i int) int {
	if axis == lang.Rows {
		return i / s.Cols
	}
	return i % s.Cols
}

// lineRegs are the host part's line values and the line states' new values.
type lineRegs struct {
	vals  [][]float64 // by register: a line value's values
	news  [][]float32 // by line state (Func.LineStates order): its new values, nil until stored
	dst   [][]float32 // the line states Step writes news into (Reduced.LineStates)
	shape Shape
	axes  []lang.Axis // by register: a line value's axis
	off   int         // Reduced.Offset
}

// hostLine evaluates the line instruction in of the host part: a line
// value, per line in float64, or the store of a line state.
func (c *code) hostLine(in instr, r *regs, red *Reduced) {
	ln := r.lines
	n := ln.shape.Len(in.axis)
	if in.op == ir.OpStore {
		ln.news[in.slot] = make([]float32, n)
		for i := range n {
			ln.news[in.slot][i] = float32(r.lineArg(in.a, i))
		}
		return
	}
	out := make([]float64, n)
	for i := range out {
		switch {
		case in.op == ir.OpLoad:
			out[i] = float64(red.LineStates[in.slot][i])
		case in.op == ir.OpReduceRows || in.op == ir.OpReduceCols:
			out[i] = red.Lines[in.slot][i]
		case in.op == ir.OpSelect:
			out[i] = lang.SelectOf(r.lineArg(in.a, i), r.lineArg(in.b, i), r.lineArg(in.c, i))
		case in.op.Arity() == 1: // in.b is register 0, which may be a line of another length
			out[i] = ir.Eval64(in.op, r.lineArg(in.a, i), 0)
		default:
			out[i] = ir.Eval64(in.op, r.lineArg(in.a, i), r.lineArg(in.b, i))
		}
	}
	ln.vals[in.dst], ln.axes[in.dst] = out, in.axis
}

// lineArg is operand k of a line instruction at line i: a line value's
// value there, or a uniform value.
func (r *regs) lineArg(k, i int) float64 {
	if v := r.lines.vals[k]; v != nil {
		return v[i]
	}
	return r.f64[k]
}

// foldLines is OpLinesSum (OpLinesMax, OpLinesMin) of the values x of a
// line value: their float64 sum from +0 (max from −Inf, min from +Inf) in
// line order.
func foldLines(op ir.Op, x []float64) float64 {
	acc, combine := 0.0, ir.OpAdd
	switch op {
	case ir.OpLinesMax:
		acc, combine = math.Inf(-1), ir.OpMax
	case ir.OpLinesMin:
		acc, combine = math.Inf(1), ir.OpMin
	}
	for _, v := range x {
		acc = ir.Eval64(combine, acc, v)
	}
	return acc
}

// newLineRegs prepares the line registers of a host part for the tensor
// red describes; nil for a block without line values.
func (c *code) newLineRegs(red *Reduced) *lineRegs {
	return &lineRegs{vals: make([][]float64, c.n), axes: make([]lang.Axis, c.n), news: make([][]float32, len(red.LineStates)),
		dst: red.LineStates, shape: red.Shape, off: red.Offset}
}

// broadcast fills dst, the kernel's float32 values of line value k at
// coordinates lo.. of the buffers.
func (ln *lineRegs) broadcast(dst []float32, k, lo int) {
	v, axis := ln.vals[k], ln.axes[k]
	for i := range dst {
		dst[i] = float32(v[ln.shape.line(axis, ln.off+lo+i)])
	}
}

// Piece is s for the step of a piece of its tensor, whose buffers start
// at coordinate off of the tensor's range (Reduced.Offset is the range's
// first): the line values are read at the piece's rows and columns. s is
// not changed, so that pieces may step at once.
func (s Scalars) Piece(off int) Scalars {
	if s.lines != nil {
		ln := *s.lines
		ln.off += off
		s.lines = &ln
	}
	return s
}

// CommitLines writes the line states' new values, which the host part
// computed, into the tensor's line states (Reduced.LineStates): after its
// pieces have stepped, so that a step that fails changes none. It does
// nothing for an optimizer without line states.
func (s Scalars) CommitLines() {
	if s.lines == nil {
		return
	}
	for k, v := range s.lines.news {
		if v != nil {
			copy(s.lines.dst[k], v)
		}
	}
}

// checkLines reports a tensor's line data that does not fit fn: a shape
// of another size than the n coordinates, line states of the wrong
// number or lengths.
func checkLines(fn *ir.Func, red *Reduced, n int) error {
	if red == nil {
		return fmt.Errorf("%s: a step of line states needs the tensor's shape and line states", fn.Name)
	}
	if err := red.Shape.holds(fn.Name, red.Offset, n); err != nil {
		return err
	}
	if len(red.LineStates) != len(fn.LineStates) {
		return fmt.Errorf("%s: %d line states, got %d", fn.Name, len(fn.LineStates), len(red.LineStates))
	}
	for i, s := range fn.LineStates {
		if want := red.Shape.Len(s.Axis); len(red.LineStates[i]) != want {
			return fmt.Errorf("%s: line state %s of a %d × %d tensor holds %d values, got %d", fn.Name, s.Name, red.Shape.Rows, red.Shape.Cols, want, len(red.LineStates[i]))
		}
	}
	return nil
}

// lineSums finishes the row or column sums of each line term (axes,
// ir.Func.ReduceAxes) from the term's values vals over the tensor; nil for
// the others.
func lineSums(axes []lang.Axis, vals [][]float32, s Shape) [][]float64 {
	out := make([][]float64, len(axes))
	for i, axis := range axes {
		term := func(j int) float32 { return vals[i][j] }
		switch axis {
		case lang.Rows:
			part := make([]float32, s.Rows*reduce.RowPartials(s.Cols))
			reduce.RowSumPartials(part, s.Rows, s.Cols, term)
			out[i] = reduce.RowTotals(part, s.Rows, s.Cols)
		case lang.Cols:
			part := make([]float32, reduce.ColChunks(s.Rows)*s.Cols)
			reduce.ColSumPartials(part, s.Rows, s.Cols, term)
			out[i] = reduce.ColTotals(part, s.Rows, s.Cols)
		}
	}
	return out
}

// noTensor is a 1 × 1 tensor whose reductions and line states are NaN, for
// a host part computed without a tensor: every line value, and every
// value that reads one (ir.ReadsReduction), is NaN.
func noTensor(fn *ir.Func) *Reduced {
	red := &Reduced{Shape: Shape{1, 1}, Numel: 1}
	for range fn.LineStates {
		red.LineStates = append(red.LineStates, []float32{float32(math.NaN())})
	}
	for range fn.NumReductions() {
		red.Totals = append(red.Totals, math.NaN())
		red.Lines = append(red.Lines, []float64{math.NaN()})
	}
	return red
}

// InitLines fills each line state (Func.LineStates order) with its initial
// value for hypers h, in float32.
func (p *Program) InitLines(h []float64, lines [][]float32) error {
	if len(lines) != len(p.Func.LineStates) || len(h) != len(p.Func.Hypers) {
		return fmt.Errorf("%s: InitLines needs %d hypers and %d line states, got %d and %d",
			p.Func.Name, len(p.Func.Hypers), len(p.Func.LineStates), len(h), len(lines))
	}
	r := p.init.host(h, 0, 0, nil)
	for _, in := range p.init.hostPart {
		if in.op == ir.OpStore {
			for i := range lines[in.slot] {
				lines[in.slot][i] = r.f32[in.a]
			}
		}
	}
	return nil
}

// ReduceShaped is Reduce for a tensor of the given shape, whose line
// terms (Func.ReduceAxes) it sums along its rows or columns (Reduced.Lines).
func (p *Program) ReduceShaped(scalars []float32, nz *Noise, bufs [][]float32, shape Shape) (*Reduced, error) {
	n := len(bufs[0])
	if shape.Rows*shape.Cols != n {
		return nil, fmt.Errorf("%s: a tensor of %d × %d has %d coordinates, not %d", p.Func.Name, shape.Rows, shape.Cols, shape.Rows*shape.Cols, n)
	}
	partials, vals := p.ShapedPartials(n)
	if err := p.ReduceValues(scalars, nz, bufs, partials, vals); err != nil {
		return nil, err
	}
	return p.FinishShaped(partials, vals, shape), nil
}

// ShapedPartials are the arrays ReduceValues fills over a tensor of n
// coordinates: each term's chunk partials, and each line term's values
// (Func.ReduceAxes; nil for the others).
func (p *Program) ShapedPartials(n int) (partials, vals [][]float32) {
	axes := p.Func.ReduceAxes()
	partials, vals = make([][]float32, len(axes)), make([][]float32, len(axes))
	for i, axis := range axes {
		partials[i] = make([]float32, reduce.ReduceChunks(n))
		if axis != lang.Coords {
			vals[i] = make([]float32, n)
		}
	}
	return partials, vals
}

// ReduceValues is ReducePartials that also copies each line term's values
// into vals[i] (as many as the buffers' coordinates; nil for the other
// terms), over a piece of whole chunks of a tensor as ReducePartials's:
// pieces may run at once, and FinishShaped then sums the values along the
// whole tensor's rows or columns.
func (p *Program) ReduceValues(scalars []float32, nz *Noise, bufs [][]float32, partials, vals [][]float32) error {
	for i, v := range vals {
		if v != nil && len(v) != len(bufs[0]) {
			return fmt.Errorf("%s: term %d's values: %d coordinates, the buffers %d", p.Func.Name, i, len(v), len(bufs[0]))
		}
	}
	return p.reducePartials(scalars, nz, bufs, partials, nil, vals)
}

// FinishShaped is Finish for a tensor of the given shape: with each line
// term's sums along its rows or columns, from its values vals over the
// whole tensor (ShapedPartials, ReduceValues).
func (p *Program) FinishShaped(partials, vals [][]float32, shape Shape) *Reduced {
	red := p.Finish(partials, shape.Rows*shape.Cols)
	red.Shape, red.Lines = shape, lineSums(p.Func.ReduceAxes(), vals, shape)
	return red
}
