package ir

import (
	"slices"

	"github.com/fibergen/fibergen/lang"
)

// Lines: states per row and per column of a 2-D tensor (docs/dsl.md, "Rows
// and columns"). A line value is an f64 value that is not uniform: one per
// row (Axis lang.Rows) or per column (lang.Cols) of the coordinate's tensor,
// computed on the host in float64 as a uniform value is, once per line. Its
// sources are the loads and stores of line states (Func.LineStates) and
// the row and column sums of reduce-block terms (OpReduceRows,
// OpReduceCols); an operation of line values and uniform ones along one
// axis is a line value along it; OpF32 reads one per coordinate, along the
// coordinate's row (column); OpLinesSum, OpLinesMax and OpLinesMin reduce
// one over the tensor into a uniform value.

// LineState is a state per row or per column: one float32 value per line
// of each tensor, which the host updates in float64.
type LineState struct {
	Name string
	Axis lang.Axis // lang.Rows or lang.Cols
}

// IsLine reports whether v is a line value.
func (v *Value) IsLine() bool { return v.Type == F64 && !v.Uniform }

// OnHost reports whether the host computes v: a uniform value, a line
// value, or the store of a line state (marked with the state's Axis).
func (v *Value) OnHost() bool {
	if v.Op == OpStore {
		return v.Axis != lang.Coords
	}
	return v.Uniform || v.IsLine()
}

// HasLines reports whether f has line states or row or column sums.
func (f *Func) HasLines() bool {
	return len(f.LineStates) > 0 || f.Reduce != nil && slices.ContainsFunc(f.ReduceAxes(), func(a lang.Axis) bool { return a != lang.Coords })
}

// ReadsLineReduction reports whether v reads a row or column sum, which
// the reduction pass computes.
func ReadsLineReduction(v *Value) bool {
	return reads(v, func(v *Value) bool { return lineReduces[v.Op] != lang.Coords }, map[*Value]bool{})
}

// ReadsLine reports whether v reads a line value or a tensor's number of
// rows or columns.
func ReadsLine(v *Value) bool {
	return reads(v, func(v *Value) bool { return v.IsLine() || v.Op.CountAxis() != lang.Coords }, map[*Value]bool{})
}

// LineState returns the line state of the name, or nil.
func (f *Func) LineState(name string) *LineState {
	i := slices.IndexFunc(f.LineStates, func(s LineState) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return &f.LineStates[i]
}

// LineStateNames lists the line states' names in declaration order.
func (f *Func) LineStateNames() []string {
	out := make([]string, len(f.LineStates))
	for i, s := range f.LineStates {
		out[i] = s.Name
	}
	return out
}

// lineReduces are the step's reads of a reduce-block term summed along
// lines, with their axis; lineCounts the numbers of lines along an axis.
var (
	lineReduces = map[Op]lang.Axis{OpReduceRows: lang.Rows, OpReduceCols: lang.Cols}
	lineCounts  = map[Op]lang.Axis{OpRows: lang.Rows, OpCols: lang.Cols}
)

// LineReduceOf is the step's read of a term's sums along axis
// (OpReduceRows, OpReduceCols); LineCountOf the number of lines along it
// (OpRows, OpCols).
func LineReduceOf(axis lang.Axis) Op { return keyOf(lineReduces, axis) }

// LineCountOf: see LineReduceOf.
func LineCountOf(axis lang.Axis) Op { return keyOf(lineCounts, axis) }

// CountAxis is the axis whose lines OpRows or OpCols counts; lang.Coords
// for any other op.
func (o Op) CountAxis() lang.Axis { return lineCounts[o] }

// keyOf is the op that m maps to axis, OpInvalid for none.
func keyOf(m map[Op]lang.Axis, axis lang.Axis) Op {
	for op, a := range m {
		if a == axis {
			return op
		}
	}
	return OpInvalid
}

// linesCombines are the reductions of a line value over the tensor, with
// their combine.
var linesCombines = map[Op]lang.Op{OpLinesSum: lang.Add, OpLinesMax: lang.Max, OpLinesMin: lang.Min}

// LinesOf is the reduction over the tensor of a line value that combines
// with c (lang.Add, lang.Max, lang.Min).
func LinesOf(c lang.Op) Op {
	for _, op := range []Op{OpLinesSum, OpLinesMax, OpLinesMin} {
		if linesCombines[op] == c {
			return op
		}
	}
	return OpInvalid
}

// ReduceAxes lists along what the reduction pass sums each term r<i>
// (ReduceTerms order): lang.Coords for a per-tensor sum (or max, min),
// lang.Rows or lang.Cols for a row or column sum, as the step's read of
// it says.
func (f *Func) ReduceAxes() []lang.Axis {
	out := make([]lang.Axis, f.NumReductions())
	terms := f.ReduceTerms()
	for _, v := range f.Step.Values {
		if i := slices.Index(terms, v.Name); lineReduces[v.Op] != lang.Coords && i >= 0 {
			out[i] = lineReduces[v.Op]
		}
	}
	return out
}

// HostLines returns, in block order, the line values the kernel part of b
// reads (through OpF32): what the host computes per line and passes in
// side buffers, as HostScalars are passed in parameters.
func HostLines(b *Block) []*Value {
	read := map[*Value]bool{}
	for _, v := range b.Values {
		if v.Op == OpF32 && v.Args[0].IsLine() {
			read[v.Args[0]] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(b.Values), func(v *Value) bool { return !read[v] })
}
