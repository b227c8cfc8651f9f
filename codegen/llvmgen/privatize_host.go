package llvmgen

import (
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// privatizeHostSignature is a privatize host function
//
//	void <symbol>(const struct fibergen_privatize *p)
//
// norms stores the partials of the tasks [lo, hi) (task =
// example·chunks(n) + chunk), scales the scales of the examples [lo, hi),
// sum the clipped sum over the divisor of the coordinates [lo, hi).
func privatizeHostSignature(symbol string) signature {
	return signature{symbol: symbol, params: []cparam{param("p", privatizeStruct.ptr())}}
}

// emitPrivatizeHost emits the host functions, one per variant.
func (k *kernel) emitPrivatizeHost() {
	k.Kernels.Privatize.HostABI = privatizeHostSignature(k.PrivatizeHostFunc("<phase>")).String()
	for _, phase := range PrivatizePhases {
		sig := privatizeHostSignature(k.PrivatizeHostFunc(phase))
		k.Kernels.Privatize.HostFunctions = append(k.Kernels.Privatize.HostFunctions, sig.symbol)
		f, b := newHelper(k.m, k.PrivatizeKernel(phase)+"_host", types.Void, sig.newParams()...)
		p := loadPrivArgs(b, f.Params[0])
		switch phase {
		case "norms":
			k.byMode(f, b, p.mode, func(b *llvm.Block, two bool) *llvm.Block {
				return k.hostReduce(f, b, p.norms(two), p.inputs(two), []value.Value{p.partials}, p.n, p.lo, p.hi)
			})
		case "scales":
			nchunks := chunkCount(b, p.n)
			k.forLoop(f, b, "example", p.lo, p.hi, i64c(1), func(b *llvm.Block, x value.Value) *llvm.Block {
				return k.exampleScale(f, b, p.partials, p.scales, x, nchunks, p.clip)
			}).NewRet(nil)
		case "sum":
			k.byMode(f, b, p.mode, func(b *llvm.Block, two bool) *llvm.Block {
				return k.hostSum(f, b, p, two)
			})
		}
		k.emitHostVariants(sig, sameLoops(f))
	}
}

// loadPrivArgs loads the fields of struct fibergen_privatize.
func loadPrivArgs(b *llvm.Block, p *llvm.Param) privArgs {
	field := func(name string) value.Value { return privatizeStruct.load(b, p, name) }
	return privArgs{cur: field("cur"), look: field("look"), partials: field("partials"), scales: field("scales"),
		out: field("out"), batch: field("batch"), n: field("n"), lo: field("lo"), hi: field("hi"), clip: field("clip"),
		a: field("a"), b: field("b"), divisor: field("divisor"), mode: field("mode")}
}

// hostSumLanes is the number of coordinates the host sum does at once.
const hostSumLanes = 8

// hostSum emits the host sum's loops for one mode: hostSumLanes
// coordinates at a time, then the rest one by one.
func (k *kernel) hostSum(f *llvm.Func, b *llvm.Block, p privArgs, two bool) *llvm.Block {
	ins := p.inputs(two)
	wide := b.NewSDiv(b.NewSub(p.hi, p.lo), i64c(hostSumLanes))
	b = k.forLoop(f, b, "wide", i64c(0), wide, i64c(1), func(b *llvm.Block, j value.Value) *llvm.Block {
		return k.sumAt(f, b, p, ins, b.NewAdd(p.lo, b.NewMul(j, i64c(hostSumLanes))), hostSumLanes, false)
	})
	start := b.NewAdd(p.lo, b.NewMul(wide, i64c(hostSumLanes)))
	return k.forLoop(f, b, "tail", start, p.hi, i64c(1), func(b *llvm.Block, i value.Value) *llvm.Block {
		return k.sumAt(f, b, p, ins, i, 1, false)
	})
}
