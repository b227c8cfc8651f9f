// Package reduce is the Go reference of fibergen's fixed-order reductions:
// the chunked lane-tree sum that the kernels compute per chunk of
// ReduceChunk coordinates (docs/kernels.md, "Reductions") — the per-example
// norms of per-example clipping and the clamp_mass diagnostic — and the
// privatize functions built on it (Privatize: mix, clip, sum, divide by the
// expected batch size).
//
// The same operations in the same order as the kernels' reductions, so the
// same bits. fibergen splices the declarations of core.go ([CoreSource])
// into every package it generates; the runtime and the interpreter call
// this package.
package reduce

import (
	_ "embed" // for CoreSource
	"fmt"
	"math"

	"github.com/fibergen/fibergen/lang"
)

// CoreSource is the text of core.go, which imports only math: fibergen
// splices its declarations, exported names and all, into the packages it
// generates.
//
//go:embed core.go
var CoreSource string

// FoldSource is the text of fold.go (FoldChunk, FoldTotal), which imports
// nothing and builds on core.go: fibergen splices it into a package whose
// step reads a per-tensor max or min.
//
//go:embed fold.go
var FoldSource string

// Fold is how a per-tensor max (lang.Max) or min (lang.Min) folds its
// terms: its identity and its combine, the DSL's operation in float32
// (lang.Eval32). A sum is SumChunk's and Total's.
func Fold(op lang.Op) (identity float32, combine func(acc, x float32) float32) {
	switch op {
	case lang.Max:
		identity = float32(math.Inf(-1))
	case lang.Min:
		identity = float32(math.Inf(1))
	default:
		panic(fmt.Sprintf("reduce: no reduction combines with %s", op))
	}
	return identity, func(acc, x float32) float32 { return lang.Eval32(op, acc, x) }
}

// Chunk is the reduction of term(i) over chunk c of [0, n) that combines
// with op, in the kernels' order: SumChunk for a sum, else FoldChunk.
func Chunk(op lang.Op, c, n int, term func(i int) float32) float32 {
	if op == lang.Add {
		return SumChunk(c, n, term)
	}
	id, combine := Fold(op)
	return FoldChunk(c, n, id, combine, term)
}

// Finish is a reduction that combines with op from its chunk partials:
// Total for a sum, else FoldTotal.
func Finish(op lang.Op, partials []float32) float64 {
	if op == lang.Add {
		return Total(partials)
	}
	id, combine := Fold(op)
	return FoldTotal(partials, id, combine)
}
