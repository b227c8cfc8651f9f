package ir

import (
	"fmt"
	"slices"
)

// Per-tensor reductions: the step's norm, sum and mean of a per-coordinate
// value over each tensor. The step reads each sum as OpReduce, a uniform
// value per tensor that the host computes between two passes over memory:
// the reduce block (Func.Reduce), which stores the terms, and the step.

// ReduceTerm is the name of the reduce block's i-th term, which the step's
// OpReduce of the same name reads summed.
func ReduceTerm(i int) string { return fmt.Sprintf("r%d", i) }

// NumReductions is the number of per-tensor sums the step reads: the
// terms the reduce block stores (0 without one).
func (f *Func) NumReductions() int {
	if f.Reduce == nil {
		return 0
	}
	return len(f.Reduce.Stores())
}

// ReduceTerms lists the terms the reduce block stores: r0, r1, ….
func (f *Func) ReduceTerms() []string {
	out := make([]string, f.NumReductions())
	for i := range out {
		out[i] = ReduceTerm(i)
	}
	return out
}

// ReduceReads lists the buffers the reduce block loads, in ABI order
// (Buffers): what the reduction pass reads.
func (f *Func) ReduceReads() []string {
	var out []string
	for _, b := range Buffers(f) {
		if slices.ContainsFunc(f.Reduce.Values, func(v *Value) bool { return v.Op == OpLoad && v.Name == b.Name }) {
			out = append(out, b.Name)
		}
	}
	return out
}

// ReduceReadsGradient reports whether the reduction pass reads g: it then
// privatizes g as the step does, and keeps it for a step that draws noise,
// which reads it and draws none (docs/kernels.md, "Reductions").
func (f *Func) ReduceReadsGradient() bool {
	return f.Reduce != nil && slices.Contains(f.ReduceReads(), GradName)
}

// ReadsReduction reports whether the uniform value v reads a per-tensor
// sum or size: a value of the tensor, not of the hypers and the step alone.
func ReadsReduction(v *Value) bool {
	return readsOp(v, OpReduce, map[*Value]bool{}) || readsOp(v, OpNumel, map[*Value]bool{})
}
