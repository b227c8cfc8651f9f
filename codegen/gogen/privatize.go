package gogen

// genPrivatize splices package reduce's core, which every generated package
// has: the chunked reduction of the kernels (SumChunk), the privatize
// functions (per-example clipping; docs/kernels.md, "Privatize") that are
// the Go reference of the kernels' <name>_privatize_* entry points, and
// Ratio, a diagnostic's value from its chunk partials; and reduce's fold.go
// where the step reads a per-tensor max or min.
func (g *generator) genPrivatize() {
	g.splice(reduceCore)
	if g.fn.ReduceFolds() {
		g.splice(reduceFold)
	}
}
