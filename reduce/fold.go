package reduce

// This file is the Go reference of the per-tensor max and min. fibergen
// splices it ([FoldSource]) into a generated package whose step reads
// one; core.go, which every generated package carries, is unchanged by it.

// FoldChunk is SumChunk with another combine: combine(acc, term) for
// acc + term, each lane starting at identity, and the same lanes and tree
// (acc_l = combine(acc_l, acc_(l xor off))). A per-tensor max folds with
// the DSL's max and starts at -Inf, a min with its min from +Inf; so an
// empty chunk gives identity, and a NaN term gives NaN. (A sum is
// SumChunk, which is FoldChunk with + from +0.)
func FoldChunk(c, n int, identity float32, combine func(acc, x float32) float32, term func(i int) float32) float32 {
	acc := [32]float32{}
	for l := range acc {
		acc[l] = identity
	}
	start, end := c*ReduceChunk, min((c+1)*ReduceChunk, n)
	for i := start; i < end; i++ {
		l := (i - start) % reduceRow / 4
		acc[l] = combine(acc[l], term(i))
	}
	for off := 16; off >= 1; off /= 2 {
		for l := range off {
			acc[l] = combine(acc[l], acc[l+off])
		}
	}
	return acc[0]
}

// FoldTotal is Total with another combine: identity folded with each
// partial in chunk order, as the host finishes a per-tensor max or min
// (exact in float32, so widened after).
func FoldTotal(partials []float32, identity float32, combine func(acc, x float32) float32) float64 {
	acc := identity
	for _, x := range partials {
		acc = combine(acc, x)
	}
	return float64(acc)
}
