package interp

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
)

// instr is one value of a block in register form: dst = op(a, b).
type instr struct {
	op    ir.Op
	typ   ir.Type
	dst   int
	a, b  int
	slot  int // OpLoad/OpStore: 0 = g, 1 = theta, 2+k = state k
	hyper int // OpHyper
	konst float64
}

// code is a block split into its host part and kernel part.
type code struct {
	n          int // number of registers
	hostPart   []instr
	kernelPart []instr
	index      map[*ir.Value]int // register of each value
}

// regs are the registers of one block evaluation.
type regs struct {
	f64 []float64
	f32 []float32
}

func compile(fn *ir.Func, b *ir.Block) (*code, error) {
	index := map[*ir.Value]int{}
	c := &code{n: len(b.Values), index: index}
	for i, v := range b.Values {
		index[v] = i
		in, err := translate(fn, v, i, index)
		if err != nil {
			return nil, fmt.Errorf("interp: block %s: %v", b.Name, err)
		}
		if v.Uniform && v.Op != ir.OpStore {
			if len(c.kernelPart) > 0 {
				return nil, fmt.Errorf("interp: block %s is not hoisted (run ir.Optimize)", b.Name)
			}
			c.hostPart = append(c.hostPart, in)
		} else {
			c.kernelPart = append(c.kernelPart, in)
		}
	}
	return c, nil
}

func translate(fn *ir.Func, v *ir.Value, i int, index map[*ir.Value]int) (instr, error) {
	in := instr{op: v.Op, typ: v.Type, dst: i, konst: v.Const}
	if len(v.Args) > 0 {
		in.a = index[v.Args[0]]
	}
	if len(v.Args) > 1 {
		in.b = index[v.Args[1]]
	}
	var err error
	switch v.Op {
	case ir.OpHyper:
		if in.hyper = fn.HyperIndex(v.Name); in.hyper < 0 {
			err = fmt.Errorf("unknown hyper %s", v.Name)
		}
	case ir.OpLoad, ir.OpStore:
		in.slot = slot(fn, v.Name)
	}
	return in, err
}

// slot numbers the buffers of a step: g, theta, then the states.
func slot(fn *ir.Func, name string) int {
	switch name {
	case "g":
		return 0
	case "theta":
		return 1
	}
	if k := slices.Index(fn.States, name); k >= 0 {
		return 2 + k
	}
	return -1 // an observation output
}

// host evaluates the host part for hypers h, step t and noise variance.
func (c *code) host(h []float64, t int, sigmaW2 float64) regs {
	r := regs{f64: make([]float64, c.n), f32: make([]float32, c.n)}
	for _, in := range c.hostPart {
		switch in.op {
		case ir.OpConst:
			r.f64[in.dst], r.f32[in.dst] = in.konst, float32(in.konst)
		case ir.OpHyper:
			r.f64[in.dst] = h[in.hyper]
		case ir.OpStepIndex:
			r.f64[in.dst] = float64(t)
		case ir.OpSigmaW2:
			r.f64[in.dst] = sigmaW2
		case ir.OpF32:
			r.f32[in.dst] = float32(r.f64[in.a])
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

// run executes the kernel part for every coordinate. Host values and
// constants (uniform, so in the host part) are already in the registers.
func (c *code) run(host regs, bufs [][]float32) {
	r := slices.Clone(host.f32)
	for i := range bufs[1] {
		for _, in := range c.kernelPart {
			switch in.op {
			case ir.OpLoad:
				r[in.dst] = bufs[in.slot][i]
			case ir.OpStore:
				bufs[in.slot][i] = r[in.a]
			default:
				r[in.dst] = ir.Eval32(in.op, r[in.a], r[in.b])
			}
		}
	}
}
