package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/lang"
)

// LineState is a state per row (Axis "rows") or per column ("cols"),
// which the host updates in float64 and stores in float32.
type LineState struct {
	Name string  `json:"name"`
	Axis string  `json:"axis"`
	Init float32 `json:"init"`
	// Growth says that its own recursion is checked for growth, with its
	// spectral radius at the setting; "" where it is not.
	Growth string `json:"growth,omitempty"`
}

// HostLine is a value per row or column that the kernel reads: the host
// computes it once per line, in float64, and passes it as float32.
type HostLine struct {
	Name string `json:"name"` // L0, L1, … (ir.HostLines order)
	Axis string `json:"axis"`
	Expr string `json:"expr"`
}

// describeLines describes the line states (initial values at hypers h)
// and the host's line values the kernel reads; nil, nil without them.
func describeLines(p *interp.Program, h []float64) ([]LineState, []HostLine) {
	var states []LineState
	bufs := make([][]float32, len(p.Func.LineStates))
	for i := range bufs {
		bufs[i] = make([]float32, 1)
	}
	p.InitLines(h, bufs) // h comes from ApplySettings, bufs from LineStates: cannot fail
	for i, s := range p.Func.LineStates {
		states = append(states, LineState{Name: s.Name, Axis: s.Axis.String(), Init: bufs[i][0], Growth: strings.TrimPrefix(growthNote(p.Func, s.Name, h), "; ")})
	}
	var lines []HostLine
	for i, v := range ir.HostLines(p.Func.Step) {
		lines = append(lines, HostLine{Name: fmt.Sprintf("L%d", i), Axis: v.Axis.String(), Expr: ir.ExprString(v)})
	}
	return states, lines
}

// writeLines writes the line states and the host's line values.
func writeLines(w io.Writer, x *Explanation) {
	if len(x.LineStates) > 0 {
		fmt.Fprintf(w, "\nstates per row or column (host, float64, stored as float32):\n")
		for _, s := range x.LineStates {
			growth := ""
			if s.Growth != "" {
				growth = "; " + s.Growth
			}
			fmt.Fprintf(w, "  %-10s %s, initial %g%s\n", s.Name, lang.AxisWords[s.Axis].Per(), s.Init, growth)
		}
	}
	if len(x.HostLines) > 0 {
		fmt.Fprintf(w, "\nhost lines (per row or column of each tensor: computed in float64, read by the kernel as float32):\n")
		for _, l := range x.HostLines {
			fmt.Fprintf(w, "  %-4s = %-40s %s\n", l.Name, l.Expr, lang.AxisWords[l.Axis].Per())
		}
	}
}
