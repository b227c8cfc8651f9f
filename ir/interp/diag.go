package interp

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
)

// ReduceChunk is the number of coordinates of one chunk of a diagnostic's
// sums (docs/kernels.md, "Reductions"): every backend sums the terms of a
// chunk in the order of ChunkSum and reports one float32 partial per chunk.
const ReduceChunk = 4096

// ChunkSum sums the terms of one chunk (at most ReduceChunk) in the fixed
// order of the kernels: 32 float32 lane accumulators from +0, term j added
// to lane (j mod 128)/4 in increasing j, then the butterfly tree (for off =
// 16, 8, 4, 2, 1: acc_l = acc_l + acc_(l xor off)); the sum is lane 0's.
func ChunkSum(terms []float32) float32 {
	var acc [32]float32
	for j, x := range terms {
		l := (j % 128) / 4
		acc[l] = float32(acc[l] + x)
	}
	for off := 16; off >= 1; off /= 2 {
		var next [32]float32
		for l := range acc {
			next[l] = float32(acc[l] + acc[l^off])
		}
		acc = next
	}
	return acc[0]
}

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

// Chunks is the number of chunk partials of n coordinates.
func Chunks(n int) int { return (n + ReduceChunk - 1) / ReduceChunk }

// Partials computes the chunk partials of the diagnostic's sums over the
// coordinates of states, the step's state buffers after the step (in
// Func.States order, all of one length n): num[c] and den[c] for each chunk
// c < Chunks(n). scalars are the step kernel's scalar arguments of the step
// that just ran (Program.KernelScalars).
func (d *Diagnostic) Partials(scalars []float32, states [][]float32, num, den []float32) error {
	n := 0
	if len(states) > 0 {
		n = len(states[0])
	}
	if len(num) != Chunks(n) || len(den) != Chunks(n) {
		return fmt.Errorf("%s: %d coordinates need %d partials, got %d and %d", d.Kind, n, Chunks(n), len(num), len(den))
	}
	host := d.hostRegs(scalars)
	terms := [2][]float32{make([]float32, ReduceChunk), make([]float32, ReduceChunk)}
	for c := range num {
		lo, hi := c*ReduceChunk, min((c+1)*ReduceChunk, n)
		bufs := [][]float32{terms[0][:hi-lo], terms[1][:hi-lo]}
		for _, s := range states {
			bufs = append(bufs, s[lo:hi])
		}
		d.code.run(host, bufs)
		num[c], den[c] = ChunkSum(bufs[0]), ChunkSum(bufs[1])
	}
	return nil
}

// hostRegs fills the registers of the host part: constants and the host
// scalars, taken from the step kernel's scalars.
func (d *Diagnostic) hostRegs(scalars []float32) regs {
	r := regs{f64: make([]float64, d.code.n), f32: make([]float32, d.code.n)}
	for _, in := range d.code.hostPart {
		if in.op == ir.OpConst {
			r.f64[in.dst], r.f32[in.dst] = in.konst, float32(in.konst)
		}
	}
	for reg, i := range d.scalars {
		if i < len(scalars) {
			r.f32[reg] = scalars[i]
		}
	}
	return r
}

// Ratio is the diagnostic's value from its chunk partials: the float64 sums
// of num and of den in chunk order, num/den, and 0 when den is 0.
func Ratio(num, den []float32) float64 {
	var sn, sd float64
	for c := range num {
		sn += float64(num[c])
		sd += float64(den[c])
	}
	if sd == 0 {
		return 0
	}
	return sn / sd
}
