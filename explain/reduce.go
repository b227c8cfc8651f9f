package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/ir"
)

// Reduce is the reduction pass of an optimizer whose step reads per-tensor
// norms, sums or means (docs/kernels.md, "Reductions"): a pass over each
// tensor before the step that reads Reads (4 bytes each per coordinate)
// and sums each term per tensor, then the step, which reads the sums.
// Where the pass reads g (KeepsGradient) and the step draws noise, the pass
// also writes the privatized g, which the step reads instead of drawing
// again.
type Reduce struct {
	Reads         []string `json:"reads"`
	KeepsGradient bool     `json:"keeps_gradient"`
	Terms         []Term   `json:"terms"`
	Operations    int      `json:"operations"`
}

// Term is one sum of the reduction pass: its name (r0, r1, …) and the
// per-coordinate expression it sums.
type Term struct {
	Name string `json:"name"`
	Expr string `json:"expr"`
}

// describeReduce describes fn's reduction pass; nil without one.
func describeReduce(fn *ir.Func) *Reduce {
	if fn.Reduce == nil {
		return nil
	}
	r := &Reduce{Reads: fn.ReduceReads(), Operations: describeKernel(fn.Reduce).Operations}
	r.KeepsGradient = fn.ReduceReadsGradient()
	for _, st := range fn.Reduce.Stores() {
		r.Terms = append(r.Terms, Term{Name: st.Name, Expr: ir.ExprString(st.Args[0])})
	}
	return r
}

// writeReduce writes the passes of a step with a reduction pass.
func writeReduce(w io.Writer, r *Reduce) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\npasses over memory: 2 (per tensor: the reduction pass, the host's float64 sums, then the step)\n")
	what := fmt.Sprintf("reads %s (%d bytes a coordinate)", strings.Join(r.Reads, " "), 4*len(r.Reads))
	if r.KeepsGradient {
		what = fmt.Sprintf("reads %s and writes g privatized (%d bytes a coordinate; the step reads that g and draws no noise of its own)", strings.Join(r.Reads, " "), 4*len(r.Reads)+4)
	}
	fmt.Fprintf(w, "  reduction pass: %s; %d operations; sums per tensor:\n", what, r.Operations)
	for _, t := range r.Terms {
		fmt.Fprintf(w, "    sum(%s) = Σ %s\n", t.Name, t.Expr)
	}
}
