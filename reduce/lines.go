package reduce

// This file is the Go reference of the row and column sums of a 2-D
// tensor of rows × cols coordinates, row-major (docs/dsl.md, "Rows and
// columns"), in the order every target adds them.

// LineChunk is the number of rows of one chunk of a column sum.
const LineChunk = 64

// RowPartials is the number of chunk partials of one row of cols
// coordinates: each row is reduced as a tensor of its own (SumChunk).
func RowPartials(cols int) int { return ReduceChunks(cols) }

// ColChunks is the number of chunks of a column sum over rows rows.
func ColChunks(rows int) int { return (rows + LineChunk - 1) / LineChunk }

// RowSumPartials writes the chunk partials of the row sums of term over
// the coordinates of a rows × cols tensor into out, row after row:
// out[r·RowPartials(cols)+c] is SumChunk of chunk c of row r, whose
// coordinate j is the tensor's r·cols + j.
func RowSumPartials(out []float32, rows, cols int, term func(i int) float32) {
	per := RowPartials(cols)
	for r := range rows {
		row := func(j int) float32 { return term(r*cols + j) }
		for c := range per {
			out[r*per+c] = SumChunk(c, cols, row)
		}
	}
}

// ColSumPartials writes the chunk partials of the column sums of term
// into out, chunk after chunk: out[k·cols+j] is the float32 sum, from +0
// in increasing row order, of term at rows k·LineChunk … of column j.
func ColSumPartials(out []float32, rows, cols int, term func(i int) float32) {
	for k := range ColChunks(rows) {
		acc := out[k*cols : (k+1)*cols]
		clear(acc)
		for r := k * LineChunk; r < min((k+1)*LineChunk, rows); r++ {
			for j := range acc {
				acc[j] = float32(acc[j] + term(r*cols+j))
			}
		}
	}
}

// RowTotals finishes row sums from RowSumPartials' partials: each row's
// partials added in float64 in chunk order (Total).
func RowTotals(partials []float32, rows, cols int) []float64 {
	per, out := RowPartials(cols), make([]float64, rows)
	for r := range out {
		out[r] = Total(partials[r*per : (r+1)*per])
	}
	return out
}

// ColTotals finishes column sums from ColSumPartials' partials: each
// column's partials added in float64 in chunk order.
func ColTotals(partials []float32, rows, cols int) []float64 {
	out := make([]float64, cols)
	for k := range ColChunks(rows) {
		for j := range out {
			out[j] += float64(partials[k*cols+j])
		}
	}
	return out
}
