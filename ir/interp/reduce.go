package interp

import (
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
)

// Reduced is what the step's host part reads of one tensor: its
// reductions (ir.OpReduce, ir.OpReduceMax, ir.OpReduceMin, ir.OpNumel),
// the total of each term of the reduce block over the tensor — its sum,
// max or min (Func.ReduceCombines; 0 for a line term, whose sums are in
// Lines) — in Func.ReduceTerms order, and the
// tensor's number of coordinates; and, for an optimizer with line values
// (lines.go), the tensor's shape, the row or column sums of each line term
// (Func.ReduceAxes; nil for the others), the line states' values before the
// step (Func.LineStates order), which Step overwrites with the new ones,
// and the tensor index of the buffers' first coordinate.
type Reduced struct {
	Totals     []float64
	Numel      int
	Shape      Shape
	Lines      [][]float64
	LineStates [][]float32
	Offset     int
}

// value is the reduction in reads; NaN without reductions, so that a
// host value that reads one is never mistaken for a number.
func (r *Reduced) value(in instr) float64 {
	switch {
	case r == nil:
		return math.NaN()
	case in.op == ir.OpNumel:
		return float64(r.Numel)
	}
	return r.Totals[in.slot]
}

// compileReduce prepares the reduce block: its terms are stored after the
// buffers (slot len(buffers)+i), where ReducePartials puts their arrays.
func compileReduce(p *Program) (*code, error) {
	c, err := compile(p.Func, p.Func.Reduce)
	if err != nil {
		return nil, err
	}
	nbuf := len(ir.Buffers(p.Func))
	for i, in := range c.kernelPart {
		if in.op == ir.OpStore {
			c.kernelPart[i].slot = nbuf + slices.Index(p.Func.ReduceTerms(), storeName(p.Func.Reduce, in.dst))
		}
	}
	c.gains, c.scalars = p.step.gains, p.step.scalars
	p.reduceScalars = ir.HostScalars(p.Func.Reduce)
	p.combines = p.Func.ReduceCombines()
	return c, nil
}

// HostScalarsReduced is HostScalars for the coordinates of one tensor,
// whose reductions are red.
func (p *Program) HostScalarsReduced(h []float64, t int, sigmaW2 float64, red *Reduced) Scalars {
	return Scalars{p.step.host(h, t, sigmaW2, red), p.step.index}
}

// ReduceScalars returns the scalar arguments of the reduction pass at
// hypers h and step t: the reduce block's host scalars (ir.HostScalars
// order), then sqrt(sigmaW2), as KernelScalars lays out the step's; nil
// without reductions.
func (p *Program) ReduceScalars(h []float64, t int, sigmaW2 float64) []float32 {
	if p.reduce == nil {
		return nil
	}
	r := p.reduce.host(h, t, sigmaW2, nil)
	out := make([]float32, 0, len(p.reduceScalars)+1)
	for _, v := range p.reduceScalars {
		out = append(out, r.f32[p.reduce.index[v]])
	}
	return append(out, rng.SigmaW(sigmaW2))
}

// ReducePartials computes the chunk partials of the reductions over the
// coordinates of bufs (theta, g, the states, in ABI order, one tensor's
// range, n coordinates each): partials[i][c] is the sum (max, min) of term
// r<i> over chunk c < reduce.ReduceChunks(n), in the kernels' order. g is
// privatized as the step privatizes it, with the noise nz (nil: g as given), whose
// Offset is the global index of the buffers' first coordinate; where kept
// is not nil (n floats) and nz draws, the privatized g is stored there.
// scalars are ReduceScalars'.
func (p *Program) ReducePartials(scalars []float32, nz *Noise, bufs [][]float32, partials [][]float32, kept []float32) error {
	return p.reducePartials(scalars, nz, bufs, partials, kept, nil)
}

// reducePartials is ReducePartials that also copies the values of each
// term i whose vals[i] is not nil (n floats) there.
func (p *Program) reducePartials(scalars []float32, nz *Noise, bufs [][]float32, partials [][]float32, kept []float32, vals [][]float32) error {
	if p.reduce == nil {
		return fmt.Errorf("%s has no reductions", p.Func.Name)
	}
	n := len(bufs[0])
	if len(partials) != p.Func.NumReductions() || len(bufs) != len(ir.Buffers(p.Func)) || (kept != nil && len(kept) != n) {
		return fmt.Errorf("%s: the reduction pass takes %d buffers, %d partial arrays and %d kept floats, got %d, %d and %d", p.Func.Name, len(ir.Buffers(p.Func)), p.Func.NumReductions(), n, len(bufs), len(partials), len(kept))
	}
	for _, part := range partials {
		if len(part) != reduce.ReduceChunks(n) {
			return fmt.Errorf("%s: %d coordinates need %d partials, got %d", p.Func.Name, n, reduce.ReduceChunks(n), len(part))
		}
	}
	host := p.reduceRegs(scalars)
	terms := make([][]float32, len(partials))
	for i := range terms {
		terms[i] = make([]float32, reduce.ReduceChunk)
	}
	gp := make([]float32, reduce.ReduceChunk)
	for c := range reduce.ReduceChunks(n) {
		lo, hi := c*reduce.ReduceChunk, min((c+1)*reduce.ReduceChunk, n)
		chunk := make([][]float32, 0, len(bufs)+len(terms))
		for _, b := range bufs {
			chunk = append(chunk, b[lo:hi])
		}
		if nz != nil && nz.Stream.Mode != rng.Off {
			into := gp[:hi-lo]
			if kept != nil {
				into = kept[lo:hi]
			}
			chunk[ir.GradBuffer] = into
			nz.Stream.Privatize(into, bufs[ir.GradBuffer][lo:hi], nz.SigmaW, nz.Offset+uint64(lo))
		}
		for _, t := range terms {
			chunk = append(chunk, t[:hi-lo])
		}
		p.reduce.run(host, chunk, noNoise)
		for i, t := range terms {
			if i < len(vals) && vals[i] != nil { // a line term: summed along its lines (lineSums), not per tensor
				copy(vals[i][lo:hi], t)
				continue
			}
			partials[i][c] = reduce.Chunk(p.combines[i], 0, hi-lo, func(j int) float32 { return t[j] })
		}
	}
	return nil
}

// reduceRegs fills the registers of the reduce block's host part from its
// kernel scalars.
func (p *Program) reduceRegs(scalars []float32) regs {
	r := p.reduce.constRegs()
	for i, v := range p.reduceScalars {
		r.f32[p.reduce.index[v]] = scalars[i]
	}
	return r
}

// Reduce computes the reductions of one tensor, bufs as ReducePartials
// takes them, finished (Finish).
func (p *Program) Reduce(scalars []float32, nz *Noise, bufs [][]float32) (*Reduced, error) {
	n := len(bufs[0])
	partials := make([][]float32, p.Func.NumReductions())
	for i := range partials {
		partials[i] = make([]float32, reduce.ReduceChunks(n))
	}
	if err := p.ReducePartials(scalars, nz, bufs, partials, nil); err != nil {
		return nil, err
	}
	return p.Finish(partials, n), nil
}

// Finish is a tensor's reductions from its partials: each term's partials
// combined in chunk order (reduce.Finish: a sum in float64, a max or min),
// and its size n.
func (p *Program) Finish(partials [][]float32, n int) *Reduced {
	r := &Reduced{Numel: n}
	for i, part := range partials {
		r.Totals = append(r.Totals, reduce.Finish(p.combines[i], part))
	}
	return r
}
