package runtime

import (
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// privReference runs phase 0 (norms), 1 (scales) or 2 (sum) of a with
// package reduce, the Go reference of the privatize kernels that every
// generated package carries a copy of: the Go backend's privatize, and the
// CPU backend's without a shared object.
func privReference(phase int, a hostkernel.PrivatizeArgs) {
	var look []float32
	if a.Mode == 1 {
		look = a.Look
	}
	n, lo, hi := int(a.N), int(a.Lo), int(a.Hi)
	switch phase {
	case 0:
		reduce.PrivatizeNorms(a.Partials, a.Cur, look, n, a.A, a.B, lo, hi)
	case 1:
		reduce.PrivatizeScales(a.Scales, a.Partials, reduce.ReduceChunks(n), a.Clip, lo, hi)
	case 2:
		reduce.PrivatizeSum(a.Out, a.Cur, look, a.Scales[:a.Batch], n, a.A, a.B, a.Divisor, lo, hi)
	}
}
