package interp

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
)

// instr is one value of a block in register form: dst = op(a, b).
type instr struct {
	op    ir.Op
	typ   ir.Type
	dst   int
	a, b  int
	c     int // OpSelect's third operand
	slot  int // OpLoad/OpStore: the buffer's ABI position (ir.ThetaBuffer, ir.GradBuffer, ir.FirstState+k = state k); OpScalar and a scalar's OpStore: k = scalar k
	hyper int // OpHyper
	konst float64
	fl    *ir.Filter // OpAtten, OpAttenT
	store ir.Storage // OpStore of a state: its storage, which the store narrows to
	axis  lang.Axis  // a line value's, or a line state's store's (lines.go); its OpLoad and OpStore slot is the line state's index
}

// code is a block split into its host part and kernel part.
type code struct {
	n          int // number of registers
	hostPart   []instr
	kernelPart []instr
	index      map[*ir.Value]int // register of each value
	gains      *gains            // the host's attenuation values
	scalars    *scalarTrack      // the scalars OpScalar reads, for the step; nil elsewhere
	lines      bool              // the block has line values or line stores (lines.go)
	noTensor   *Reduced          // with lines: a 1 × 1 tensor of NaN line sums and states, for a host part without one
}

// regs are the registers of one block evaluation.
type regs struct {
	f64   []float64
	f32   []float32
	lines *lineRegs // nil for a block without line values
}

func compile(fn *ir.Func, b *ir.Block) (*code, error) {
	index := map[*ir.Value]int{}
	c := &code{n: len(b.Values), index: index}
	for i, v := range b.Values {
		index[v] = i
		in, err := translate(fn, v, i, index)
		if err != nil {
			return nil, fmt.Errorf("interp: block %s: %w", b.Name, err)
		}
		c.lines = c.lines || in.axis != lang.Coords
		if v.OnHost() {
			if len(c.kernelPart) > 0 {
				return nil, fmt.Errorf("interp: block %s is not hoisted (run ir.Optimize)", b.Name)
			}
			c.hostPart = append(c.hostPart, in)
		} else {
			c.kernelPart = append(c.kernelPart, in)
		}
	}
	if c.lines {
		c.noTensor = noTensor(fn)
	}
	return c, nil
}

func translate(fn *ir.Func, v *ir.Value, i int, index map[*ir.Value]int) (instr, error) {
	in := instr{op: v.Op, typ: v.Type, dst: i, konst: v.Const, axis: v.Axis}
	if len(v.Args) > 0 {
		in.a = index[v.Args[0]]
	}
	if len(v.Args) > 1 {
		in.b = index[v.Args[1]]
	}
	if len(v.Args) > 2 {
		in.c = index[v.Args[2]]
	}
	var err error
	switch v.Op {
	case ir.OpHyper:
		if in.hyper = fn.HyperIndex(v.Name); in.hyper < 0 {
			err = fmt.Errorf("unknown hyper %s", v.Name)
		}
	case ir.OpLoad, ir.OpStore, ir.OpScalar:
		in.slot, in.store = slot(fn, v.Name), fn.StorageOf(v.Name)
		if v.Axis != lang.Coords { // a line state's load or store
			in.slot = slices.Index(fn.LineStateNames(), v.Name)
		}
	case ir.OpReduce, ir.OpReduceMax, ir.OpReduceMin, ir.OpReduceRows, ir.OpReduceCols:
		in.slot = slices.Index(fn.ReduceTerms(), v.Name)
	case ir.OpAtten, ir.OpAttenT:
		if in.fl = fn.Filter(v.Name); in.fl == nil {
			err = fmt.Errorf("no filter for state %s", v.Name)
		}
	}
	return in, err
}

// slot numbers the buffers of a step in the kernels' ABI order (ir/abi.go):
// theta, g, then the states.
func slot(fn *ir.Func, name string) int {
	switch name {
	case ir.ThetaName:
		return ir.ThetaBuffer
	case ir.GradName:
		return ir.GradBuffer
	}
	if k := slices.Index(fn.States, name); k >= 0 {
		return ir.FirstState + k
	}
	if k := slices.Index(fn.Scalars, name); k >= 0 {
		return k
	}
	if k := slices.Index(fn.ReduceTerms(), name); k >= 0 {
		return k // a term of the reduce block
	}
	return -1 // an observation output
}

// host evaluates the host part for hypers h, step t and noise variance,
// with the scalars at step t and the tensor's reductions red (nil: NaN).
func (c *code) host(h []float64, t int, sigmaW2 float64, red *Reduced) regs {
	var scal []float64
	if c.scalars != nil {
		scal = c.scalars.at(h, t, sigmaW2)
	}
	return c.hostWith(h, t, sigmaW2, scal, red)
}

// hostWith is host with the values OpScalar reads given.
func (c *code) hostWith(h []float64, t int, sigmaW2 float64, scal []float64, red *Reduced) regs {
	r := regs{f64: make([]float64, c.n), f32: make([]float32, c.n)}
	if c.lines {
		if red == nil { // no tensor: every line value NaN (HostScalars, CheckValues)
			red = c.noTensor
		}
		r.lines = c.newLineRegs(red)
	}
	for _, in := range c.hostPart {
		if in.axis != lang.Coords {
			c.hostLine(in, &r, red)
			continue
		}
		switch in.op {
		case ir.OpConst:
			r.f64[in.dst], r.f32[in.dst] = in.konst, float32(in.konst)
		case ir.OpHyper:
			r.f64[in.dst] = h[in.hyper]
		case ir.OpStepIndex:
			r.f64[in.dst] = float64(t)
		case ir.OpSigmaW2:
			r.f64[in.dst] = sigmaW2
		case ir.OpScalar:
			r.f64[in.dst] = scal[in.slot]
		case ir.OpReduce, ir.OpReduceMax, ir.OpReduceMin, ir.OpNumel:
			r.f64[in.dst] = red.value(in)
		case ir.OpRows, ir.OpCols:
			r.f64[in.dst] = float64(r.lines.shape.Len(in.op.CountAxis()))
		case ir.OpLinesSum, ir.OpLinesMax, ir.OpLinesMin:
			r.f64[in.dst] = foldLines(in.op, r.lines.vals[in.a])
		case ir.OpF32:
			r.f32[in.dst] = float32(r.f64[in.a])
		case ir.OpAtten:
			r.f64[in.dst] = c.gains.steadyGain(in.fl, h)
		case ir.OpAttenT:
			r.f64[in.dst] = c.gains.finiteGain(in.fl, h, t)
		case ir.OpSelect:
			if in.typ == ir.F32 {
				r.f32[in.dst] = lang.SelectOf(r.f32[in.a], r.f32[in.b], r.f32[in.c])
			} else {
				r.f64[in.dst] = lang.SelectOf(r.f64[in.a], r.f64[in.b], r.f64[in.c])
			}
		default:
			if in.typ == ir.F32 {
				r.f32[in.dst] = ir.Eval32(in.op, r.f32[in.a], r.f32[in.b])
			} else {
				r.f64[in.dst] = ir.Eval64(in.op, r.f64[in.a], r.f64[in.b])
			}
		}
	}
	return r
}

// chunk is the number of coordinates the kernel interprets per instruction:
// one dispatch per instruction and chunk instead of per coordinate.
const chunk = 512

// run executes the kernel part for every coordinate, a chunk of coordinates
// at a time. Each coordinate still sees the same operations in the same
// order, so the result is the same as one coordinate at a time. nz is the
// noise of a noise block's draws (rng.Off: none).
func (c *code) run(host regs, bufs [][]float32, nz *Noise) {
	n := len(bufs[0]) // every buffer holds the n coordinates
	r := c.kernelRegs(host, min(n, chunk))
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		m := hi - lo
		for _, in := range c.kernelPart {
			switch in.op {
			case ir.OpLoad:
				copy(r[in.dst], bufs[in.slot][lo:hi])
			case ir.OpF32: // of a line value: the uniform ones are the host part's
				host.lines.broadcast(r[in.dst][:m], in.a, lo)
			case ir.OpStore:
				store(in.store, bufs[in.slot][lo:hi], r[in.a][:m], nz, in.slot, lo)
			case ir.OpSelect:
				for i, x := range r[in.a][:m] {
					r[in.dst][i] = lang.SelectOf(x, r[in.b][i], r[in.c][i])
				}
			case ir.OpDraw:
				nz.Stream.Draw(r[in.dst][:m], nz.SigmaW, nz.Offset+uint64(lo))
			case ir.OpPrivatize:
				nz.Stream.Add(r[in.dst][:m], r[in.a][:m], r[in.b][:m], nz.SigmaW)
			default:
				apply(in.op, r[in.dst][:m], r[in.a][:m], r[in.b])
			}
		}
	}
}

// store writes the values src of coordinates lo.. into dst, a buffer of
// storage s at ABI position slot: narrowed to s, stochastically with the
// rounding bits of nz's seed and step (rng.Narrow).
func store(s ir.Storage, dst, src []float32, nz *Noise, slot, lo int) {
	if !s.Narrow() {
		copy(dst, src)
		return
	}
	rng.Narrow(s.DType, dst, src, s.Stochastic, nz.Stream.Seed, nz.Stream.Step, slot, nz.Offset+uint64(lo))
}

// kernelRegs allocates registers of size coordinates for every value the
// kernel part reads or writes, and fills those of host values (uniform, read
// by the kernel) with their value.
func (c *code) kernelRegs(host regs, size int) [][]float32 {
	r := make([][]float32, c.n)
	for _, in := range c.kernelPart {
		regsOf := []int{in.dst, in.a, in.b}
		if in.op == ir.OpSelect {
			regsOf = append(regsOf, in.c)
		}
		for _, i := range regsOf {
			if r[i] == nil {
				r[i] = make([]float32, size)
			}
		}
	}
	for _, in := range c.hostPart {
		for j := range r[in.dst] { // nil, so skipped, unless the kernel reads it
			r[in.dst][j] = host.f32[in.dst]
		}
	}
	return r
}

// apply computes dst[i] = op(a[i], b[i]) with the semantics of ir.Eval32;
// the common operations get loops of their own, the rest call Eval32.
func apply(op ir.Op, dst, a, b []float32) {
	b = b[:len(dst)]
	switch op {
	case ir.OpAdd:
		for i := range dst {
			dst[i] = float32(a[i] + b[i])
		}
	case ir.OpSub:
		for i := range dst {
			dst[i] = float32(a[i] - b[i])
		}
	case ir.OpMul:
		for i := range dst {
			dst[i] = float32(a[i] * b[i])
		}
	case ir.OpDiv:
		for i := range dst {
			dst[i] = float32(a[i] / b[i])
		}
	default:
		for i := range dst {
			dst[i] = ir.Eval32(op, a[i], b[i])
		}
	}
}
