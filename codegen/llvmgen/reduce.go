package llvmgen

import (
	"slices"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/reduce"
)

// This file emits fibergen's chunked reduction, whose order is fixed so that
// the PTX kernels, the host functions and the Go reference (package reduce's
// SumChunk) compute the same bits (docs/kernels.md, "Reductions"). The
// input is rows of n elements; row r's chunk c covers the elements
// [c·ReduceChunk, min((c+1)·ReduceChunk, n)). The sum of a chunk runs on 32
// float32 lane accumulators starting at +0: element j of the chunk belongs
// to lane (j mod 128)/4, each lane adds its elements in increasing j
// (acc = acc + term, the term rounded to float32 first), elements at or past
// n are skipped; then the butterfly tree, for off = 16, 8, 4, 2, 1:
// acc_l = acc_l + acc_(l xor off) for every lane at once. The sum is lane 0's.

// ReduceChunk is the number of elements of one chunk of a reduction, that of
// the Go reference (package reduce).
const ReduceChunk = reduce.ReduceChunk

const (
	reduceLanes = 32              // accumulators per chunk: the lanes of a warp
	reduceRow   = 4 * reduceLanes // elements per row of a chunk: four per lane
	rowsPerTask = ReduceChunk / reduceRow
)

// reduction is a chunked sum of per-element terms.
type reduction struct {
	// inputs are the arrays read: row r of input k starts at ins[k] + r·n.
	inputs int
	// stored is how each input stores its values (ir.Storage: a bf16
	// state's loads widen); nil: every input is float32.
	stored []ir.Storage
	// noise, where set, privatizes input grad (g) as the step does before
	// the terms read it (reduction.privatized).
	noise *passNoise
	// keep, where set (with noise), is a float pointer at which the loops
	// store the privatized g of every element below n, at its index in the
	// row (one row only); where it is null at run time they store nothing.
	keep value.Value
	// terms returns the float32 terms to sum at w lanes of elements, from
	// the (prepared) inputs' values there. Every result is a sum of its
	// own. An emitter calls it once per copy of the loop it emits.
	terms func(b *llvm.Block, w lanes, in []value.Value) []value.Value
	sums  int // how many values terms returns
	// combines, where set, is how each sum combines its terms: lang.Add
	// (a sum, as without it), lang.Max or lang.Min, which run the same
	// lanes and tree with the DSL's max or min for + from -Inf or +Inf
	// (reduce.FoldChunk).
	combines []lang.Op
	// prefetch: the host loop asks for its inputs' rows prefetchAhead
	// elements ahead (the reduction pass, whose work between loads, a
	// noise draw and LAMB's update, leaves their latency exposed).
	prefetch bool
}

// storage is how input i stores its values.
func (r reduction) storage(i int) ir.Storage { return storageAt(r.stored, i) }

// storageAt is stored[i], float32 for a nil stored.
func storageAt(stored []ir.Storage, i int) ir.Storage {
	if stored == nil {
		return float32Storage
	}
	return stored[i]
}

// sizes are the bytes of one value of each input.
func (r reduction) sizes() []int64 {
	out := make([]int64, r.inputs)
	for i := range out {
		out[i] = int64(r.storage(i).DType.Size())
	}
	return out
}

// combine is how r's sum s combines its terms.
func (r reduction) combine(s int) lang.Op {
	if r.combines == nil {
		return lang.Add
	}
	return r.combines[s]
}

// identity is where r's sum s starts, and what an element past n adds to
// it, in every lane of w: +0, or -Inf for a max and +Inf for a min.
func (r reduction) identity(s int, w lanes) value.Value {
	if r.combine(s) == lang.Add {
		return zero(w) // the zero initializer, as the sums have always had
	}
	id, _ := reduce.Fold(r.combine(s))
	return w.f(id)
}

// identities are the starting values of all of r's sums at w lanes.
func (r reduction) identities(w lanes) []value.Value {
	out := make([]value.Value, r.sums)
	for s := range out {
		out[s] = r.identity(s, w)
	}
	return out
}

// fold emits the combine of r's sum s of acc with x: acc + x, or the
// DSL's max(acc, x) or min(acc, x).
func (r reduction) fold(b *llvm.Block, s int, acc, x value.Value) value.Value {
	if r.combine(s) == lang.Add {
		return b.NewFAdd(acc, x)
	}
	return selectMinMax(b, acc, x, r.combine(s) == lang.Max)
}

// passNoise is the DP noise a reduction pass adds to input grad, g.
type passNoise struct {
	grad int
	// draw returns the Gaussians of the elements a loop takes at once (a
	// device lane's four, a host row's 128) from index at of the row.
	draw func(b *llvm.Block, at value.Value) value.Value
	// add adds z, w lanes of them, to g's values x: g privatized.
	add func(b *llvm.Block, w lanes, x, z value.Value) value.Value
}

// drawn is the noise of the elements from index at, drawn once before the
// loops branch on how they load them; nil without noise.
func (r reduction) drawn(b *llvm.Block, at value.Value) value.Value {
	if r.noise == nil {
		return nil
	}
	return r.noise.draw(b, at)
}

// privatized is in, w lanes of the inputs' values, as r's terms read
// them: g with the noise z (drawn) added.
func (r reduction) privatized(b *llvm.Block, w lanes, in []value.Value, z value.Value) []value.Value {
	if r.noise == nil {
		return in
	}
	in = slices.Clone(in)
	in[r.noise.grad] = r.noise.add(b, w, in[r.noise.grad], z)
	return in
}

// keepStore emits, after block b, the store of the privatized g of in (w
// lanes of elements from index at) at r.keep + at, where r.keep is not
// null and cond (nil: true) holds, and returns the block after it.
func (k *kernel) keepStore(f *llvm.Func, b *llvm.Block, r reduction, in []value.Value, w lanes, at, cond value.Value) *llvm.Block {
	if r.keep == nil {
		return b
	}
	var on value.Value = b.NewICmp(enum.IPredNE, r.keep, constant.NewNull(f32Ptr))
	if cond != nil {
		on = b.NewAnd(on, cond)
	}
	st, done := f.NewBlock(k.label("keep")), f.NewBlock(k.label("kept"))
	b.NewCondBr(on, st, done)
	storeLanes(st, in[r.noise.grad], st.NewGetElementPtr(f32, r.keep, at), w, false)
	st.NewBr(done)
	return done
}

// chunkCount emits ceil(n / ReduceChunk) for n >= 0.
func chunkCount(b *llvm.Block, n value.Value) value.Value {
	return b.NewSDiv(b.NewAdd(n, i64c(ReduceChunk-1)), i64c(ReduceChunk))
}

// taskRows emits where the task t (row·nchunks + chunk) starts: the row
// pointers of the inputs, the chunk's first element and the number of rows
// of reduceRow elements it has (the last may be partial).
func (r reduction) taskRows(b *llvm.Block, ins []value.Value, t, n, nchunks value.Value) (rows []value.Value, start, count value.Value) {
	row, c := b.NewSDiv(t, nchunks), b.NewSRem(t, nchunks)
	for i, p := range ins {
		rows = append(rows, b.NewGetElementPtr(elemType(r.storage(i)), p, b.NewMul(row, n)))
	}
	start = b.NewMul(c, i64c(ReduceChunk))
	left := b.NewSDiv(b.NewAdd(b.NewSub(n, start), i64c(reduceRow-1)), i64c(reduceRow))
	count = b.NewSelect(b.NewICmp(enum.IPredSLT, left, i64c(rowsPerTask)), left, i64c(rowsPerTask))
	return rows, start, count
}

// zero is +0 in every lane of w.
func zero(w lanes) value.Value {
	if w == 1 {
		return f32c(0)
	}
	return constant.NewZeroInitializer(w.f32())
}

// loopCarry emits `for i := start; i < end; i += step { vals = body(vals) }`
// after block b (signed i64 comparison) and returns the block after the
// loop and the values after it.
func (k *kernel) loopCarry(f *llvm.Func, b *llvm.Block, name string, start, end, step value.Value, init []value.Value,
	body func(b *llvm.Block, i value.Value, vals []value.Value) (*llvm.Block, []value.Value)) (*llvm.Block, []value.Value) {
	head, loop, exit := f.NewBlock(k.label(name+".head")), f.NewBlock(k.label(name)), f.NewBlock(k.label(name+".done"))
	b.NewBr(head)
	i := head.NewPhi(llvm.NewIncoming(start, b))
	phis, vals := make([]*llvm.InstPhi, len(init)), make([]value.Value, len(init))
	for j, v := range init {
		phis[j] = head.NewPhi(llvm.NewIncoming(v, b))
		vals[j] = phis[j]
	}
	head.NewCondBr(head.NewICmp(enum.IPredSLT, i, end), loop, exit)
	last, next := body(loop, i, vals)
	inc := last.NewAdd(i, step)
	last.NewBr(head)
	i.Incs = append(i.Incs, llvm.NewIncoming(inc, last))
	for j := range phis {
		phis[j].Incs = append(phis[j].Incs, llvm.NewIncoming(next[j], last))
	}
	return exit, vals
}

// ifElse emits `if cond { then } else { els }` after block b; both branches
// return the same number of values, which the block after them joins.
func (k *kernel) ifElse(f *llvm.Func, b *llvm.Block, cond value.Value,
	then, els func(b *llvm.Block) (*llvm.Block, []value.Value)) (*llvm.Block, []value.Value) {
	tb, eb, join := f.NewBlock(k.label("then")), f.NewBlock(k.label("else")), f.NewBlock(k.label("join"))
	b.NewCondBr(cond, tb, eb)
	tEnd, tVals := then(tb)
	eEnd, eVals := els(eb)
	tEnd.NewBr(join)
	eEnd.NewBr(join)
	out := make([]value.Value, len(tVals))
	for i := range tVals {
		out[i] = join.NewPhi(llvm.NewIncoming(tVals[i], tEnd), llvm.NewIncoming(eVals[i], eEnd))
	}
	return join, out
}

// warpReduce emits, from block b of the NVPTX kernel f, the reduction r of
// rows×chunks(n) tasks: warp w of the grid (the block size a multiple of
// 32) takes the tasks w, w + warps, …, and lane 0 stores sum s of task t at
// outs[s] + t. Every lane of a warp runs the same iterations, so all reach
// the shuffles. It returns the block after the loop.
func (k *kernel) warpReduce(f *llvm.Func, b *llvm.Block, r reduction, ins, outs []value.Value, rows, n value.Value) *llvm.Block {
	tid, stride := k.threadIndex(b)
	warp, warps, lane := b.NewLShr(tid, i64c(5)), b.NewLShr(stride, i64c(5)), b.NewAnd(tid, i64c(reduceLanes-1))
	nchunks := chunkCount(b, n)
	tasks := b.NewMul(rows, nchunks)
	return k.forLoop(f, b, "task", warp, tasks, warps, func(b *llvm.Block, t value.Value) *llvm.Block {
		ptrs, start, count := r.taskRows(b, ins, t, n, nchunks)
		aligned := alignedAt(b, ptrs, r.sizes(), i64c(0))
		b, acc := k.loopCarry(f, b, "row", i64c(0), count, i64c(1), r.identities(1), func(b *llvm.Block, row value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
			base := b.NewAdd(b.NewAdd(start, b.NewMul(row, i64c(reduceRow))), b.NewShl(lane, i64c(2)))
			return k.laneTerms(f, b, r, ptrs, base, n, aligned, acc)
		})
		for _, off := range []uint32{16, 8, 4, 2, 1} {
			for s := range acc {
				other := b.NewCall(intrinsic(k.m, "llvm.nvvm.shfl.sync.bfly.f32", f32, i32, f32, i32, i32), i32c(0xffffffff), acc[s], i32c(off), i32c(0x1f))
				acc[s] = r.fold(b, s, acc[s], other)
			}
		}
		store0, done := f.NewBlock(k.label("lane0")), f.NewBlock(k.label("stored"))
		b.NewCondBr(b.NewICmp(enum.IPredEQ, lane, i64c(0)), store0, done)
		for s := range acc {
			store(store0, acc[s], store0.NewGetElementPtr(f32, outs[s], t), 4)
		}
		store0.NewBr(done)
		return done
	})
}

// laneTerms adds to acc the terms of one lane's four elements base..base+3
// of the rows ptrs, in order: one 128-bit load per input where the rows are
// aligned and the four elements lie below n, else four loads at indexes
// clamped below n, the terms of the elements past n skipped.
func (k *kernel) laneTerms(f *llvm.Func, b *llvm.Block, r reduction, ptrs []value.Value, base, n, aligned value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
	full := b.NewICmp(enum.IPredSLE, b.NewAdd(base, i64c(4)), n)
	z := r.drawn(b, base)
	add := func(b *llvm.Block, vals [][]value.Value, masked bool) (*llvm.Block, []value.Value) {
		out := append([]value.Value(nil), acc...)
		vals = r.privatizedLane(b, vals, z)
		for e := range 4 {
			var in []value.Value
			for _, v := range vals {
				in = append(in, v[e])
			}
			at := b.NewAdd(base, i64c(int64(e)))
			inRange := b.NewICmp(enum.IPredSLT, at, n)
			if r.keep != nil { // not even the index's add for a reduction that keeps nothing
				b = k.keepStore(f, b, r, in, 1, at, inRange)
			}
			for s, t := range r.terms(b, 1, in) {
				if masked {
					t = b.NewSelect(inRange, t, r.identity(s, 1))
				}
				out[s] = r.fold(b, s, out[s], t)
			}
		}
		return b, out
	}
	return k.ifElse(f, b, b.NewAnd(aligned, full), func(b *llvm.Block) (*llvm.Block, []value.Value) {
		var vals [][]value.Value
		for i, p := range ptrs {
			s := r.storage(i)
			vals = append(vals, loadCoords(b, s, b.NewGetElementPtr(elemType(s), p, base), 4, true))
		}
		return add(b, vals, false)
	}, func(b *llvm.Block) (*llvm.Block, []value.Value) {
		last := b.NewSub(n, i64c(1))
		var vals [][]value.Value
		for j, p := range ptrs {
			var v []value.Value
			for e := range 4 {
				i := b.NewAdd(base, i64c(int64(e)))
				at := b.NewSelect(b.NewICmp(enum.IPredSLT, i, n), i, last)
				v = append(v, loadStored(b, r.storage(j), p, at, 1, 4))
			}
			vals = append(vals, v)
		}
		return add(b, vals, true)
	})
}

// privatizedLane is a device lane's values of its four elements
// (vals[input][element]) as r's terms read them: g privatized as a vector
// of four with the lane's noise z, drawn at once (noiseLane).
func (r reduction) privatizedLane(b *llvm.Block, vals [][]value.Value, z value.Value) [][]value.Value {
	if r.noise == nil {
		return vals
	}
	vals = slices.Clone(vals)
	g := r.noise.add(b, laneElems, packLanes(b, vals[r.noise.grad]), z)
	vals[r.noise.grad] = unpackLanes(b, g, laneElems)
	return vals
}

// hostReduce emits, from block b of the host function f, the reduction r
// of the tasks [lo, hi) (task t = row·chunks(n) + chunk), storing sum s of
// task t at outs[s] + t. The 32 lane accumulators are one <32 x float>
// vector; a row of 128 elements is one <128 x float> load per input (from a
// padded copy for a row that ends past n). It returns the block after the
// loop.
func (k *kernel) hostReduce(f *llvm.Func, b *llvm.Block, r reduction, ins, outs []value.Value, n, lo, hi value.Value) *llvm.Block {
	nchunks := chunkCount(b, n)
	return k.forLoop(f, b, "task", lo, hi, i64c(1), func(b *llvm.Block, t value.Value) *llvm.Block {
		ptrs, start, count := r.taskRows(b, ins, t, n, nchunks)
		b, acc := k.loopCarry(f, b, "row", i64c(0), count, i64c(1), r.identities(reduceLanes), func(b *llvm.Block, row value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
			base := b.NewAdd(start, b.NewMul(row, i64c(reduceRow)))
			if r.prefetch {
				k.prefetchRows(b, r, ptrs, b.NewAdd(base, i64c(prefetchAhead)))
			}
			full := b.NewICmp(enum.IPredSLE, b.NewAdd(base, i64c(reduceRow)), n)
			z := r.drawn(b, base)
			return k.ifElse(f, b, full, func(b *llvm.Block) (*llvm.Block, []value.Value) {
				in := r.privatized(b, reduceRow, rowLoads(b, ptrs, r.stored, base), z)
				b = k.keepStore(f, b, r, in, reduceRow, base, nil)
				return b, rowTerms(b, r, in, nil, acc)
			}, func(b *llvm.Block) (*llvm.Block, []value.Value) {
				b, padded := k.padRows(f, b, r, ptrs, base, n)
				mask := rowMask(b, base, n)
				in := r.privatized(b, reduceRow, rowLoads(b, padded, nil, i64c(0)), z)
				b = k.keepTail(f, b, r, in, base, n)
				return b, rowTerms(b, r, in, mask, acc)
			})
		})
		for _, off := range []int{16, 8, 4, 2, 1} {
			for s := range acc {
				acc[s] = r.fold(b, s, acc[s], b.NewShuffleVector(acc[s], constantUndef(acc[s].Type()), laneMask(func(l int) int { return l ^ off })))
			}
		}
		for s := range acc {
			store(b, b.NewExtractElement(acc[s], i32c(0)), b.NewGetElementPtr(f32, outs[s], t), 4)
		}
		return b
	})
}

// rowVec is one row of a reduction on the host: <128 x float>.
var rowVec = types.NewVector(reduceRow, f32)

// rowMask emits the mask of the elements base..base+127 that lie below n.
func rowMask(b *llvm.Block, base, n value.Value) value.Value {
	return b.NewICmp(enum.IPredSLT, rowIndexes(b, base), broadcast(b, lanes(reduceRow), n))
}

// rowIndexes emits the indexes base..base+127 of a row's elements.
func rowIndexes(b *llvm.Block, base value.Value) value.Value {
	idx := make([]constant.Constant, reduceRow)
	for e := range idx {
		idx[e] = i64c(int64(e))
	}
	return b.NewAdd(broadcast(b, lanes(reduceRow), base), constant.NewVector(types.NewVector(reduceRow, i64), idx...))
}

// rowLoads loads the rows base..base+127 of ptrs, stored as stored says
// (nil: float32), one <128 x float> each.
func rowLoads(b *llvm.Block, ptrs []value.Value, stored []ir.Storage, base value.Value) []value.Value {
	var in []value.Value
	for i, p := range ptrs {
		in = append(in, loadStored(b, storageAt(stored, i), p, base, reduceRow, 4))
	}
	return in
}

// rowTerms adds (folds) the terms of one row's values in to the lane
// accumulators acc: element 4l+j of the row to lane l, j = 0, 1, 2, 3 in
// turn. mask nil adds every term; else the terms of the elements it clears
// are added as the sum's identity.
func rowTerms(b *llvm.Block, r reduction, in []value.Value, mask value.Value, acc []value.Value) []value.Value {
	w := lanes(reduceRow)
	out := append([]value.Value(nil), acc...)
	for s, t := range r.terms(b, w, in) {
		if mask != nil {
			t = b.NewSelect(mask, t, r.identity(s, w))
		}
		for j := range 4 {
			out[s] = r.fold(b, s, out[s], b.NewShuffleVector(t, constantUndef(rowVec), laneMask(func(l int) int { return 4*l + j })))
		}
	}
	return out
}

// keepTail stores r's kept input of the row in, elements base..n-1 (fewer
// than 128), at r.keep + base, through a row on f's stack, where r.keep is
// not null; it returns the block after.
func (k *kernel) keepTail(f *llvm.Func, b *llvm.Block, r reduction, in []value.Value, base, n value.Value) *llvm.Block {
	if r.keep == nil {
		return b
	}
	row := k.stackRow(f, b)
	store(b, in[r.noise.grad], b.NewBitCast(row, types.NewPointer(rowVec)), 4)
	return k.forLoop(f, b, "keep", i64c(0), b.NewSelect(b.NewICmp(enum.IPredNE, r.keep, constant.NewNull(f32Ptr)), b.NewSub(n, base), i64c(0)), i64c(1), func(b *llvm.Block, e value.Value) *llvm.Block {
		st := b.NewStore(load(b, f32, b.NewGetElementPtr(f32, row, e), 4), b.NewGetElementPtr(f32, r.keep, b.NewAdd(base, e)))
		st.Align, st.Volatile = 4, true
		return b
	})
}

// padRows copies the elements base..n-1 of the rows ptrs (fewer than 128)
// into rows of 128 floats on f's stack, +0 past them, and returns those: the
// values a masked load would give, with plain loads. (A masked <128 x float>
// load becomes 128 branches on a target without one, SSE2, which took llc
// seconds; the copy's stores are volatile so that LLVM does not make the
// loop a call to memcpy, which the shared object does not link.)
func (k *kernel) padRows(f *llvm.Func, b *llvm.Block, r reduction, ptrs []value.Value, base, n value.Value) (*llvm.Block, []value.Value) {
	var rows []value.Value
	for i, p := range ptrs {
		row := k.stackRow(f, b)
		b = k.forLoop(f, b, "pad", i64c(0), b.NewSub(n, base), i64c(1), func(b *llvm.Block, e value.Value) *llvm.Block {
			st := b.NewStore(loadStored(b, r.storage(i), p, b.NewAdd(base, e), 1, 4), b.NewGetElementPtr(f32, row, e))
			st.Align, st.Volatile = 4, true
			return b
		})
		rows = append(rows, row)
	}
	return b, rows
}

// stackRow emits a row of 128 floats on f's stack, set to +0 in block b,
// and returns a float pointer to it.
func (k *kernel) stackRow(f *llvm.Func, b *llvm.Block) value.Value {
	slot := llvm.NewAlloca(rowVec)
	slot.Align = 4
	f.Blocks[0].Insts = append([]llvm.Instruction{slot}, f.Blocks[0].Insts...)
	store(b, zero(lanes(reduceRow)), slot, 4)
	return b.NewBitCast(slot, f32Ptr)
}

// laneMask is the shufflevector mask that takes element pick(l) into lane l
// of the 32 lanes.
func laneMask(pick func(l int) int) constant.Constant {
	idx := make([]constant.Constant, reduceLanes)
	for l := range idx {
		idx[l] = i32c(uint32(pick(l)))
	}
	return constant.NewVector(types.NewVector(reduceLanes, i32), idx...)
}

// broadcast puts the scalar x in every lane of w (an insertelement and a
// shufflevector, however wide w is).
func broadcast(b *llvm.Block, w lanes, x value.Value) value.Value {
	if w == 1 {
		return x
	}
	v := b.NewInsertElement(constantUndef(w.vec(x.Type())), x, i32c(0))
	return b.NewShuffleVector(v, constantUndef(v.Type()), constant.NewZeroInitializer(types.NewVector(uint64(w), i32)))
}

// prefetchAhead is how far ahead of the row it reduces a prefetching host
// loop asks for its inputs, in elements: four rows measured best (2, 8 and
// 16 rows were slower; docs/benchmarks.md, "Draw once").
const prefetchAhead = 4 * reduceRow

// prefetchRows emits a prefetch (read, keep in every cache level) of the
// 64-byte cache lines of a row of reduceRow elements from index at of each
// of ptrs, r's inputs.
func (k *kernel) prefetchRows(b *llvm.Block, r reduction, ptrs []value.Value, at value.Value) {
	i8p := types.NewPointer(types.I8)
	fn := intrinsic(k.m, "llvm.prefetch.p0i8", types.Void, i8p, i32, i32, i32)
	for i, p := range ptrs {
		s := r.storage(i)
		for line := int64(0); line < reduceRow; line += int64(64 / s.DType.Size()) {
			addr := b.NewBitCast(b.NewGetElementPtr(elemType(s), p, b.NewAdd(at, i64c(line))), i8p)
			b.NewCall(fn, addr, i32c(0), i32c(3), i32c(1))
		}
	}
}
