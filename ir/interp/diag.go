package interp

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/reduce"
)

// Diagnostic is a diagnostic of the Func prepared for interpretation.
type Diagnostic struct {
	Kind    string
	code    *code
	scalars map[int]int // register of each host scalar → index in the step kernel's scalars
}

// Diagnostic prepares the diagnostic of the given kind; an error if the
// optimizer declares none.
func (p *Program) Diagnostic(kind string) (*Diagnostic, error) {
	d := p.Func.Diagnostic(kind)
	if d == nil {
		return nil, fmt.Errorf("%s declares no diagnostic %s (add `diagnostic %s(mhat, vbar)` to its .dsl)", p.Func.Name, kind, kind)
	}
	c, err := compile(p.Func, d.Block)
	if err != nil {
		return nil, err
	}
	// The terms go where the step's theta and g go (Partials runs the
	// block on the terms, then the states): the diagnostic reads states
	// only, and its two terms fit below ir.FirstState.
	for i, in := range c.kernelPart {
		if in.op == ir.OpStore {
			c.kernelPart[i].slot = slices.Index(ir.DiagTerms, storeName(d.Block, in.dst))
		}
	}
	idx, err := d.ScalarIndexes(p.Func)
	if err != nil {
		return nil, err
	}
	dg := &Diagnostic{Kind: kind, code: c, scalars: map[int]int{}}
	for i, v := range ir.HostScalars(d.Block) {
		dg.scalars[c.index[v]] = idx[i]
	}
	return dg, nil
}

func storeName(b *ir.Block, i int) string { return b.Values[i].Name }

// Partials computes the chunk partials of the diagnostic's sums over the
// coordinates of states, the step's state buffers after the step (in
// Func.States order, all of one length n): num[c] and den[c] for each chunk
// c < reduce.ReduceChunks(n). scalars are the step kernel's scalar arguments of the step
// that just ran (Program.KernelScalars).
func (d *Diagnostic) Partials(scalars []float32, states [][]float32, num, den []float32) error {
	n := 0
	if len(states) > 0 {
		n = len(states[0])
	}
	if len(num) != reduce.ReduceChunks(n) || len(den) != reduce.ReduceChunks(n) {
		return fmt.Errorf("%s: %d coordinates need %d partials, got %d and %d", d.Kind, n, reduce.ReduceChunks(n), len(num), len(den))
	}
	host := d.hostRegs(scalars)
	terms := [2][]float32{make([]float32, reduce.ReduceChunk), make([]float32, reduce.ReduceChunk)}
	for c := range num {
		lo, hi := c*reduce.ReduceChunk, min((c+1)*reduce.ReduceChunk, n)
		bufs := [][]float32{terms[0][:hi-lo], terms[1][:hi-lo]}
		for _, s := range states {
			bufs = append(bufs, s[lo:hi])
		}
		d.code.run(host, bufs, noNoise)
		num[c], den[c] = chunkSum(bufs[0]), chunkSum(bufs[1])
	}
	return nil
}

// constRegs are c's registers with the constants of its host part set.
func (c *code) constRegs() regs {
	r := regs{f64: make([]float64, c.n), f32: make([]float32, c.n)}
	for _, in := range c.hostPart {
		if in.op == ir.OpConst {
			r.f64[in.dst], r.f32[in.dst] = in.konst, float32(in.konst)
		}
	}
	return r
}

// hostRegs fills the registers of the host part: constants and the host
// scalars, taken from the step kernel's scalars.
func (d *Diagnostic) hostRegs(scalars []float32) regs {
	r := d.code.constRegs()
	for reg, i := range d.scalars {
		if i < len(scalars) {
			r.f32[reg] = scalars[i]
		}
	}
	return r
}

// chunkSum sums one chunk's terms, terms[j] for coordinate j of the chunk,
// in the kernels' order (reduce.SumChunk).
func chunkSum(terms []float32) float32 {
	return reduce.SumChunk(0, len(terms), func(j int) float32 { return terms[j] })
}
