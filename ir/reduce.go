package ir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// Per-tensor reductions: the step's norm, sum, mean, max and min of a
// per-coordinate value over each tensor. The step reads each as OpReduce
// (a sum; norm and mean are computed from one), OpReduceMax or
// OpReduceMin, a uniform value per tensor that the host computes between
// two passes over memory: the reduce block (Func.Reduce), which stores the
// terms, and the step.

// reduceCombines are the step's reads of a reduction, each with how the
// reduction pass combines its term: lang.Add, lang.Max or lang.Min.
var reduceCombines = map[Op]lang.Op{OpReduce: lang.Add, OpReduceMax: lang.Max, OpReduceMin: lang.Min}

// IsReduce reports whether o reads a per-tensor reduction of a term.
func (o Op) IsReduce() bool { _, ok := reduceCombines[o]; return ok }

// ReduceOf is the step's read of a term that the pass combines with c
// (lang.Add, lang.Max, lang.Min).
func ReduceOf(c lang.Op) Op {
	for op, oc := range reduceCombines {
		if oc == c {
			return op
		}
	}
	return OpInvalid
}

// CombineName names a combine as the DSL does: sum, max or min.
func CombineName(c lang.Op) string {
	if c == lang.Add {
		return "sum"
	}
	return c.Name()
}

// ReduceCombines lists how the reduction pass combines each term r<i>
// (ReduceTerms order): lang.Add, lang.Max or lang.Min, as the step's read
// of it says; lang.Add for a term the step no longer reads.
func (f *Func) ReduceCombines() []lang.Op {
	out := make([]lang.Op, f.NumReductions())
	for i := range out {
		out[i] = lang.Add
	}
	terms := f.ReduceTerms()
	for _, v := range f.Step.Values {
		if i := slices.Index(terms, v.Name); v.Op.IsReduce() && i >= 0 {
			out[i] = reduceCombines[v.Op]
		}
	}
	return out
}

// ReduceFolds reports whether a term of the pass is a max or a min, not a
// sum: the pass then needs the folds (reduce.FoldChunk) and its manifest
// says how each term combines.
func (f *Func) ReduceFolds() bool {
	return slices.ContainsFunc(f.ReduceCombines(), func(c lang.Op) bool { return c != lang.Add })
}

// ReduceTerm is the name of the reduce block's i-th term, which the step's
// OpReduce (OpReduceMax, OpReduceMin) of the same name reads reduced.
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

// ReduceCombineNames names each term's combine as the DSL does: sum, max
// or min (ReduceCombines order).
func (f *Func) ReduceCombineNames() []string {
	var out []string
	for _, c := range f.ReduceCombines() {
		out = append(out, CombineName(c))
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

// NonFiniteHostFormat is the message of host scalar S<i>, expr, not finite
// for a tensor, with a verb for its value (%v): a reduction gave the step
// a value that would spoil the tensor. The runtime's refusal and the
// generated packages' (Scalars.checkFinite) share it.
func NonFiniteHostFormat(i int, expr string) string {
	return fmt.Sprintf("the host value S%d = %s is %%v: the step would spoil the tensor, so it did not run (guard the reduction, e.g. select(norm(u) > 0, …, 1))",
		i, strings.ReplaceAll(expr, "%", "%%"))
}

// ReadsReduction reports whether v reads a reduction (over the tensor,
// its rows or its columns), the tensor's size or shape, or a line value:
// a value of the tensor, not of the hypers and the step alone.
func ReadsReduction(v *Value) bool {
	return reads(v, func(v *Value) bool {
		return v.Op.IsReduce() || v.Op == OpNumel || v.IsLine() || v.Op.CountAxis() != lang.Coords
	}, map[*Value]bool{})
}
