package cuda

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// emitPrivatizeHost emits the host functions
//
//	void <name>_privatize_<phase>_cpu(const struct fibergen_privatize *p)
//
// and their AVX2 twins: norms stores the partials of the tasks [lo, hi)
// (task = example·chunks(n) + chunk), scales the scales of the examples
// [lo, hi), sum the clipped sum over the divisor of the coordinates
// [lo, hi).
func (k *kernel) emitPrivatizeHost() {
	for _, phase := range PrivatizePhases {
		f, b := newHelper(k.m, k.PrivatizeKernel(phase)+"_host", types.Void, ir.NewParam("p", types.NewPointer(privatizeType)))
		p := loadPrivArgs(b, f.Params[0])
		switch phase {
		case "norms":
			k.byMode(f, b, p.mode, func(b *ir.Block, two bool) *ir.Block {
				return k.hostReduce(f, b, p.norms(two), p.inputs(two), []value.Value{p.partials}, p.n, p.lo, p.hi)
			})
		case "scales":
			nchunks := chunkCount(b, p.n)
			k.forLoop(f, b, "example", p.lo, p.hi, i64c(1), func(b *ir.Block, x value.Value) *ir.Block {
				return k.exampleScale(f, b, p.partials, p.scales, x, nchunks, p.clip)
			}).NewRet(nil)
		case "sum":
			k.byMode(f, b, p.mode, func(b *ir.Block, two bool) *ir.Block {
				return k.hostSum(f, b, p, two)
			})
		}
		k.emitHostTwins(k.PrivatizeHostFunc(phase), f)
	}
}

// emitHostTwins emits the exported function name, which calls inner with
// its one pointer argument, and its twin name_avx2 compiled for x86-64-v3.
func (k *kernel) emitHostTwins(name string, inner *ir.Func) {
	for _, v := range []struct {
		name  string
		attrs []ir.FuncAttribute
	}{{name, nil}, {name + "_avx2", []ir.FuncAttribute{ir.AttrPair{Key: "target-cpu", Value: "x86-64-v3"}}}} {
		p := ir.NewParam("p", inner.Params[0].Typ)
		f := k.m.NewFunc(v.name, types.Void, p)
		f.FuncAttrs = append([]ir.FuncAttribute{enum.FuncAttrNoUnwind}, v.attrs...)
		b := f.NewBlock("entry")
		b.NewCall(inner, p)
		b.NewRet(nil)
	}
}

// loadPrivArgs loads the fields of struct fibergen_privatize.
func loadPrivArgs(b *ir.Block, p value.Value) privArgs {
	field := func(i int) value.Value {
		t := privatizeType.Fields[i]
		align := 8
		if i >= 10 {
			align = 4
		}
		return load(b, t, b.NewGetElementPtr(privatizeType, p, i32c(0), i32c(uint32(i))), align)
	}
	return privArgs{cur: field(0), look: field(1), partials: field(2), scales: field(3), out: field(4),
		batch: field(5), n: field(6), lo: field(7), hi: field(8), clip: field(9), a: field(10), b: field(11),
		divisor: field(12), mode: field(13)}
}

// hostSumLanes is the number of coordinates the host sum does at once.
const hostSumLanes = 8

// hostSum emits the host sum's loops for one mode: hostSumLanes
// coordinates at a time, then the rest one by one.
func (k *kernel) hostSum(f *ir.Func, b *ir.Block, p privArgs, two bool) *ir.Block {
	ins := p.inputs(two)
	wide := b.NewSDiv(b.NewSub(p.hi, p.lo), i64c(hostSumLanes))
	b = k.forLoop(f, b, "wide", i64c(0), wide, i64c(1), func(b *ir.Block, j value.Value) *ir.Block {
		return k.sumAt(f, b, p, ins, b.NewAdd(p.lo, b.NewMul(j, i64c(hostSumLanes))), hostSumLanes, false)
	})
	start := b.NewAdd(p.lo, b.NewMul(wide, i64c(hostSumLanes)))
	return k.forLoop(f, b, "tail", start, p.hi, i64c(1), func(b *ir.Block, i value.Value) *ir.Block {
		return k.sumAt(f, b, p, ins, i, 1, false)
	})
}
