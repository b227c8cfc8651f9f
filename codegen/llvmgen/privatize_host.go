package llvmgen

import (
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
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

// hostSumBlock is the number of coordinates whose sums the host sum keeps
// on the stack (16 KiB): it reads each example's block of them front to
// back, a stream per row at a time, rather than every row at each group of
// coordinates. The order of each coordinate's sum is the same.
const hostSumBlock = 4096

// hostSum emits the host sum's loops for one mode: [lo, hi) in blocks of
// hostSumBlock coordinates.
func (k *kernel) hostSum(f *llvm.Func, b *llvm.Block, p privArgs, two bool) *llvm.Block {
	slot := llvm.NewAlloca(types.NewArray(hostSumBlock, f32))
	slot.Align = 16
	f.Blocks[0].Insts = append([]llvm.Instruction{slot}, f.Blocks[0].Insts...)
	acc := b.NewBitCast(slot, f32Ptr)
	blocks := b.NewSDiv(b.NewAdd(b.NewSub(p.hi, p.lo), i64c(hostSumBlock-1)), i64c(hostSumBlock))
	return k.forLoop(f, b, "block", i64c(0), blocks, i64c(1), func(b *llvm.Block, blk value.Value) *llvm.Block {
		start := b.NewAdd(p.lo, b.NewMul(blk, i64c(hostSumBlock)))
		left := b.NewSub(p.hi, start)
		count := b.NewSelect(b.NewICmp(enum.IPredSLT, left, i64c(hostSumBlock)), left, i64c(hostSumBlock))
		return k.blockSum(f, b, p, p.inputs(two), acc, start, count)
	})
}

// blockSum emits the clipped sum of the count coordinates from start: the
// sums acc set to +0, each example's scaled u added in example order (two
// examples' rows read at once), then out = acc / divisor.
func (k *kernel) blockSum(f *llvm.Func, b *llvm.Block, p privArgs, ins []value.Value, acc, start, count value.Value) *llvm.Block {
	b = k.blockLoop(f, b, count, func(b *llvm.Block, j value.Value, w lanes) *llvm.Block {
		st := b.NewStore(zero(w), laneAddr(b, acc, j, w))
		st.Align, st.Volatile = 4, true // not a call to memset, which the shared object does not link
		return b
	})
	pairs := b.NewMul(b.NewSDiv(p.batch, i64c(2)), i64c(2))
	for _, run := range []struct {
		name       string
		start, end value.Value
		step       int64
	}{{"pair", i64c(0), pairs, 2}, {"example", pairs, p.batch, 1}} {
		b = k.forLoop(f, b, run.name, run.start, run.end, i64c(run.step), func(b *llvm.Block, x value.Value) *llvm.Block {
			return k.blockLoop(f, b, count, func(b *llvm.Block, j value.Value, w lanes) *llvm.Block {
				at := laneAddr(b, acc, j, w)
				sum := load(b, w.f32(), at, 4)
				for e := range run.step {
					sum = k.addScaled(b, p, ins, sum, b.NewAdd(x, i64c(e)), b.NewAdd(start, j), w)
				}
				store(b, sum, at, 4)
				return b
			})
		})
	}
	return k.blockLoop(f, b, count, func(b *llvm.Block, j value.Value, w lanes) *llvm.Block {
		mean := b.NewFDiv(load(b, w.f32(), laneAddr(b, acc, j, w), 4), broadcast(b, w, p.divisor))
		storeLanes(b, mean, b.NewGetElementPtr(f32, p.out, b.NewAdd(start, j)), w, false)
		return b
	})
}

// blockLoop emits body over [0, count): at j = 0, 8, 16, ... for the
// groups of hostSumLanes, then one by one.
func (k *kernel) blockLoop(f *llvm.Func, b *llvm.Block, count value.Value, body func(b *llvm.Block, j value.Value, w lanes) *llvm.Block) *llvm.Block {
	wide := b.NewMul(b.NewSDiv(count, i64c(hostSumLanes)), i64c(hostSumLanes))
	b = k.forLoop(f, b, "wide", i64c(0), wide, i64c(hostSumLanes), func(b *llvm.Block, j value.Value) *llvm.Block {
		return body(b, j, hostSumLanes)
	})
	return k.forLoop(f, b, "tail", wide, count, i64c(1), func(b *llvm.Block, j value.Value) *llvm.Block {
		return body(b, j, 1)
	})
}

// laneAddr is the address of w floats at acc + j, as a pointer to their
// vector (to the float for w 1).
func laneAddr(b *llvm.Block, acc, j value.Value, w lanes) value.Value {
	ptr := b.NewGetElementPtr(f32, acc, j)
	if w == 1 {
		return ptr
	}
	return b.NewBitCast(ptr, types.NewPointer(w.f32()))
}

// addScaled emits sum + scales[x]·u_x[i..i+w), u_x[i] the mix of the
// inputs at x·n + i.
func (k *kernel) addScaled(b *llvm.Block, p privArgs, ins []value.Value, sum, x, i value.Value, w lanes) value.Value {
	at := b.NewAdd(b.NewMul(x, p.n), i)
	var in []value.Value
	for _, ptr := range ins {
		in = append(in, loadLanes(b, b.NewGetElementPtr(f32, ptr, at), w, false))
	}
	s := load(b, f32, b.NewGetElementPtr(f32, p.scales, x), 4)
	return b.NewFAdd(sum, b.NewFMul(broadcast(b, w, s), p.mix(b, w, in)))
}
