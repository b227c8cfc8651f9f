package lang

// Axis says how many values a state or an expression of the step holds
// per tensor: one per coordinate (Coords, the zero value), or, for a 2-D
// tensor of r rows and c columns, one per row (Rows, r values) or one per
// column (Cols, c values). docs/dsl.md, "Rows and columns".
type Axis int

// The axes.
const (
	Coords Axis = iota
	Rows
	Cols
)

// AxisWords are the words that declare a state per row or per column:
// `state r: rows = 0`.
var AxisWords = map[string]Axis{"rows": Rows, "cols": Cols}

// String is the axis's word as the DSL writes it ("coords" for Coords).
func (a Axis) String() string {
	switch a {
	case Rows:
		return "rows"
	case Cols:
		return "cols"
	}
	return "coords"
}

// Per names the axis in a message: "per coordinate", "per row", "per
// column".
func (a Axis) Per() string { return "per " + a.Line() }

// Line is what the axis holds one value of: "coordinate", "row" or
// "column".
func (a Axis) Line() string {
	switch a {
	case Rows:
		return "row"
	case Cols:
		return "column"
	}
	return "coordinate"
}

// Join is the axis of an operation of operands of axes a and b: a row
// value with a column value is one per coordinate, as the outer product
// of the two; otherwise the two agree or one is per coordinate.
func (a Axis) Join(b Axis) Axis {
	if a == b {
		return a
	}
	return Coords
}

// LineReductions are the reductions along the rows or the columns of a
// 2-D tensor, with the axis of their value: rowsum(x) and rowmean(x) hold
// one value per row, colsum(x) and colmean(x) one per column.
var LineReductions = map[string]Axis{"rowsum": Rows, "rowmean": Rows, "colsum": Cols, "colmean": Cols}
