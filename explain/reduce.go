package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// Reduce is the reduction pass of an optimizer whose step reads per-tensor
// norms, sums, means, maxima or minima (docs/kernels.md, "Reductions"): a
// pass over each tensor before the step that reads Reads (4 bytes each per
// coordinate) and sums (or takes the max or min of) each term per tensor,
// then the step, which reads the totals.
// Where the pass reads g (KeepsGradient) and the step draws noise, the pass
// also writes the privatized g, which the step reads instead of drawing
// again.
type Reduce struct {
	Reads         []string `json:"reads"`
	KeepsGradient bool     `json:"keeps_gradient"`
	Terms         []Term   `json:"terms"`
	Operations    int      `json:"operations"`
}

// Term is one total of the reduction pass: its name (r0, r1, …), how it
// combines (sum, max or min) and the per-coordinate expression it combines.
type Term struct {
	Name    string `json:"name"`
	Combine string `json:"combine"`
	Expr    string `json:"expr"`
}

// describeReduce describes fn's reduction pass; nil without one.
func describeReduce(fn *ir.Func) *Reduce {
	if fn.Reduce == nil {
		return nil
	}
	r := &Reduce{Reads: fn.ReduceReads(), Operations: describeKernel(fn.Reduce).Operations}
	r.KeepsGradient = fn.ReduceReadsGradient()
	combines := fn.ReduceCombineNames()
	for i, axis := range fn.ReduceAxes() {
		if axis != lang.Coords {
			combines[i] = map[lang.Axis]string{lang.Rows: "rowsum", lang.Cols: "colsum"}[axis]
		}
	}
	for i, st := range fn.Reduce.Stores() {
		r.Terms = append(r.Terms, Term{Name: st.Name, Combine: combines[i], Expr: ir.ExprString(st.Args[0])})
	}
	return r
}

// writeReduce writes the passes of a step with a reduction pass.
func writeReduce(w io.Writer, r *Reduce) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\npasses over memory: 2 (per tensor: the reduction pass, the host's totals, then the step)\n")
	what := fmt.Sprintf("reads %s (%d bytes a coordinate)", strings.Join(r.Reads, " "), 4*len(r.Reads))
	if r.KeepsGradient {
		what = fmt.Sprintf("reads %s and writes g privatized (%d bytes a coordinate; the step reads that g and draws no noise of its own)", strings.Join(r.Reads, " "), 4*len(r.Reads)+4)
	}
	fmt.Fprintf(w, "  reduction pass: %s; %d operations; per tensor:\n", what, r.Operations)
	for _, t := range r.Terms {
		fmt.Fprintf(w, "    %s(%s) = %s %s\n", t.Combine, t.Name, combineText[t.Combine], t.Expr)
	}
}

// combineText says what each combine does to a term, before the term.
var combineText = map[string]string{"sum": "Σ", "max": "max over the tensor of", "min": "min over the tensor of",
	"rowsum": "Σ along each row of", "colsum": "Σ along each column of"}
