package runtime

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/fibergen/fibergen/ir/interp"
)

// Checkpoints of line states (lines.go): the header's "line_states" and
// "lines", and the data after the buffers (checkpoint.go has the format).

// checkpointLines is a tensor whose line states a checkpoint holds: a
// registered tensor's range, or a gap's.
type checkpointLines struct {
	Offset int64 `json:"offset"`
	Len    int64 `json:"len"`
	Rows   int64 `json:"rows"`
	Cols   int64 `json:"cols"`
}

// linesHeader lists the tensors whose line states exist, by offset, and
// those line states in the same order; none for an optimizer without line
// states.
func (o *Optimizer) linesHeader() ([]checkpointLines, [][][]float32) {
	if len(o.prog.Func.LineStates) == 0 {
		return nil, nil
	}
	keys := slices.SortedFunc(maps.Keys(o.lines), func(a, b linesKey) int { return cmp.Compare(a.lo, b.lo) })
	var entries []checkpointLines
	var vals [][][]float32
	for _, k := range keys {
		tl := o.lines[k]
		entries = append(entries, checkpointLines{Offset: int64(k.lo), Len: int64(k.hi - k.lo), Rows: int64(tl.shape.Rows), Cols: int64(tl.shape.Cols)})
		vals = append(vals, tl.states)
	}
	return entries, vals
}

// linesValues is the number of floats the line states of the header's
// entries hold, at most limit, or an error where the entries are not a
// checkpoint's: overlapping, out of order, of a shape that does not hold
// their coordinates, of an unknown axis, or of more values than limit —
// each checked before it is used, so that no count wraps and decodeLines
// allocates no more than the data holds. Whether they fit the optimizer's
// buffers is matchLines's.
func linesValues(h *checkpointHeader, limit int64) (int64, error) {
	var perRows, perCols, total int64
	for _, s := range h.LineStates {
		switch s.Axis {
		case "rows":
			perRows++
		case "cols":
			perCols++
		default:
			return 0, fmt.Errorf("line state %s along %q, not rows or cols", s.Name, s.Axis)
		}
	}
	end := int64(0)
	for _, e := range h.Lines {
		if e.Offset < end || e.Len < 1 || e.Offset > math.MaxInt64-e.Len || e.Rows < 1 || e.Cols < 1 || e.Len%e.Cols != 0 || e.Rows != e.Len/e.Cols {
			return 0, fmt.Errorf("line states of %d × %d over [%d, %d) after %d", e.Rows, e.Cols, e.Offset, e.Offset+e.Len, end)
		}
		end = e.Offset + e.Len
		var ok bool
		if total, ok = addBounded(total, perRows, e.Rows, limit); ok {
			total, ok = addBounded(total, perCols, e.Cols, limit)
		}
		if !ok {
			return 0, fmt.Errorf("line states of more values than the %d the data holds", limit)
		}
	}
	return total, nil
}

// addBounded is total + k·n where that is at most limit (all >= 0).
func addBounded(total, k, n, limit int64) (int64, bool) {
	if k != 0 && n > (limit-total)/k {
		return 0, false
	}
	return total + k*n, true
}

// writeLines writes the line states vals of the header's entries.
func writeLines(w io.Writer, vals [][][]float32, raw []byte) error {
	for _, ls := range vals {
		for _, v := range ls {
			if err := writeFloats(w, v, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeLines reads the line states of the header's entries from raw.
func decodeLines(h *checkpointHeader, raw []byte) [][][]float32 {
	var out [][][]float32
	for _, e := range h.Lines {
		var ls [][]float32
		for _, s := range h.LineStates {
			n := e.Cols
			if s.Axis == "rows" {
				n = e.Rows
			}
			v := make([]float32, n)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			raw = raw[4*n:]
			ls = append(ls, v)
		}
		out = append(out, ls)
	}
	return out
}

// matchLines checks a checkpoint's line states against the optimizer: the
// same line states, and each entry a registered tensor of that shape or
// the coordinates between them, one row.
func (o *Optimizer) matchLines(h *checkpointHeader) *loadError {
	if want := o.LineStates(); !slices.Equal(h.LineStates, want) {
		return mismatch("checkpoint holds the line states %v, this optimizer %v", h.LineStates, want)
	}
	for _, e := range h.Lines {
		if e.Offset+e.Len > int64(o.n) {
			return mismatch("checkpoint holds line states of coordinates [%d, %d), past this optimizer's %d", e.Offset, e.Offset+e.Len, o.n)
		}
		lo, hi := int(e.Offset), int(e.Offset+e.Len)
		for _, t := range o.tensors {
			switch {
			case t.Offset == lo && t.Offset+t.Len == hi:
				if s := lineShape(t.shape, t.Len); s != (interp.Shape{Rows: int(e.Rows), Cols: int(e.Cols)}) {
					return mismatch("checkpoint holds line states of tensor %s as %d × %d, this optimizer steps it as %d × %d", t.Name, e.Rows, e.Cols, s.Rows, s.Cols)
				}
			case t.Offset < hi && lo < t.Offset+t.Len:
				return mismatch("checkpoint holds line states of coordinates [%d, %d), which cut tensor %s", lo, hi, t.Name)
			}
		}
		if e.Rows != 1 && !slices.ContainsFunc(o.tensors, func(t *Tensor) bool { return t.Offset == lo }) {
			return mismatch("checkpoint holds line states of %d rows over coordinates [%d, %d), which are no tensor's: they step as one row", e.Rows, lo, hi)
		}
	}
	return nil
}

// restoreLines makes the checkpoint's line states the optimizer's.
func (o *Optimizer) restoreLines(h *checkpointHeader, vals [][][]float32) {
	o.lines = map[linesKey]*tensorLines{}
	for i, e := range h.Lines {
		shape := interp.Shape{Rows: int(e.Rows), Cols: int(e.Cols)}
		o.lines[linesKey{int(e.Offset), int(e.Offset + e.Len)}] = &tensorLines{shape, vals[i]}
	}
}
