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
)

// CoreSource is the text of core.go, which imports only math: fibergen
// splices its declarations, exported names and all, into the packages it
// generates.
//
//go:embed core.go
var CoreSource string
