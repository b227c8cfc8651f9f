package llvmgen

import (
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file emits the norms of per-example gradients read in place, one
// tensor at a time (docs/kernels.md, "Privatize in place"): the host
// function <name>_privatize_norms_piece_cpu adds the terms u·u of one
// tensor's coordinates (a piece of the rows) to the 32 lane accumulators
// of each chunk they lie in, for each example, loading and storing them,
// so that the pieces added in order and the lane tree give the norms'
// partials bit for bit (package reduce's PrivatizeNormsPiece and
// SegmentNorms). It reads each example's piece front to back, as the norms
// read a row.

// PrivatizePieceHostFunc is the piece's host function, e.g.
// fiber_privatize_norms_piece_cpu (with its _avx2 and _avx512 twins).
func (k *Module) PrivatizePieceHostFunc() string {
	return k.PrivatizeKernel("norms_piece") + hostSuffix
}

// privatizePieceStruct is the piece's only argument: example ξ's n
// coordinates of the piece at cur + ξ·stride (and look's, read in mode 1),
// the first at position first (< 4096) of its first chunk; the lane
// accumulators of example ξ's chunks at acc + ξ·acc_stride, 32 per chunk
// from the piece's first, those of the examples [lo, hi) loaded, added to
// and stored.
var privatizePieceStruct = newStruct("fibergen_privatize_piece",
	cfield{"cur", cScalars}, cfield{"look", cScalars}, cfield{"acc", cFloatPtr},
	cfield{"stride", cInt64}, cfield{"n", cInt64}, cfield{"first", cInt64}, cfield{"acc_stride", cInt64},
	cfield{"lo", cInt64}, cfield{"hi", cInt64},
	cfield{"a", cFloat}, cfield{"b", cFloat}, cfield{"mode", ctype{"uint32_t", i32}})

// pieceArgs are the fields of struct fibergen_privatize_piece.
type pieceArgs struct {
	privArgs
	acc, stride, first, accStride value.Value
}

// loadPieceArgs loads the fields of struct fibergen_privatize_piece.
func loadPieceArgs(b *llvm.Block, p *llvm.Param) pieceArgs {
	field := func(name string) value.Value { return privatizePieceStruct.load(b, p, name) }
	return pieceArgs{privArgs: privArgs{cur: field("cur"), look: field("look"), n: field("n"), lo: field("lo"), hi: field("hi"),
		a: field("a"), b: field("b"), mode: field("mode")},
		acc: field("acc"), stride: field("stride"), first: field("first"), accStride: field("acc_stride")}
}

// emitNormsPieceHost emits the piece's host function and its variants.
func (k *kernel) emitNormsPieceHost() {
	sig := signature{symbol: k.PrivatizePieceHostFunc(), params: []cparam{param("p", privatizePieceStruct.ptr())}}
	k.Kernels.Privatize.HostPiece, k.Kernels.Privatize.HostPieceABI = sig.symbol, sig.String()
	f, b := newHelper(k.m, k.PrivatizeKernel("norms_piece")+"_host", types.Void, sig.newParams()...)
	p := loadPieceArgs(b, f.Params[0])
	k.byMode(f, b, p.mode, func(b *llvm.Block, two bool) *llvm.Block {
		return k.forLoop(f, b, "example", p.lo, p.hi, i64c(1), func(b *llvm.Block, x value.Value) *llvm.Block {
			return k.examplePiece(f, b, p, p.norms(two), p.inputs(two), x)
		})
	})
	k.emitHostVariants(sig, sameLoops(f))
}

// pieceShape emits the rows of a piece in its 128-coordinate rows: the
// phase of its first coordinate in its row, the row of its chunk it starts
// in (0..31), its number of rows and of chunks (0 for no coordinates).
func pieceShape(b *llvm.Block, p pieceArgs) (phase, firstRow, rows, chunks value.Value) {
	phase, firstRow = b.NewAnd(p.first, i64c(reduceRow-1)), b.NewAShr(p.first, i64c(7))
	rows = b.NewSDiv(b.NewAdd(b.NewAdd(phase, p.n), i64c(reduceRow-1)), i64c(reduceRow))
	perChunk := int64(ReduceChunk / reduceRow)
	spanned := b.NewSDiv(b.NewAdd(b.NewAdd(firstRow, rows), i64c(perChunk-1)), i64c(perChunk))
	chunks = b.NewSelect(b.NewICmp(enum.IPredSGT, rows, i64c(0)), spanned, i64c(0))
	return phase, firstRow, rows, chunks
}

// examplePiece emits the piece of example x, chunk by chunk: the chunk's
// accumulators loaded, its rows of the piece added (row r holds the
// piece's coordinates [128r − phase, 128(r+1) − phase)), the accumulators
// stored.
func (k *kernel) examplePiece(f *llvm.Func, b *llvm.Block, p pieceArgs, r reduction, ins []value.Value, x value.Value) *llvm.Block {
	var ptrs []value.Value
	for _, in := range ins {
		ptrs = append(ptrs, b.NewGetElementPtr(f32, in, b.NewMul(x, p.stride)))
	}
	accX := b.NewGetElementPtr(f32, p.acc, b.NewMul(x, p.accStride))
	phase, firstRow, rows, chunks := pieceShape(b, p)
	perChunk := i64c(ReduceChunk / reduceRow)
	return k.forLoop(f, b, "piece.chunk", i64c(0), chunks, i64c(1), func(b *llvm.Block, q value.Value) *llvm.Block {
		accPtr := b.NewBitCast(b.NewGetElementPtr(f32, accX, b.NewMul(q, i64c(reduceLanes))), types.NewPointer(types.NewVector(reduceLanes, f32)))
		acc := []value.Value{load(b, types.NewVector(reduceLanes, f32), accPtr, 4)}
		start := b.NewSub(b.NewMul(q, perChunk), firstRow)
		r0 := b.NewSelect(b.NewICmp(enum.IPredSLT, start, i64c(0)), i64c(0), start)
		end := b.NewAdd(start, perChunk)
		r1 := b.NewSelect(b.NewICmp(enum.IPredSLT, end, rows), end, rows)
		b, acc = k.loopCarry(f, b, "piece.row", r0, r1, i64c(1), acc, func(b *llvm.Block, row value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
			return k.pieceRow(f, b, p, r, ptrs, b.NewSub(b.NewMul(row, i64c(reduceRow)), phase), acc)
		})
		store(b, acc[0], accPtr, 4)
		return b
	})
}

// pieceRow emits the terms of the piece's row whose first element is the
// piece's coordinate base (negative in a first row that starts before the
// piece), added to acc: one load where the row lies inside the piece, else
// the row copied onto the stack with +0 around the piece's part.
func (k *kernel) pieceRow(f *llvm.Func, b *llvm.Block, p pieceArgs, r reduction, ptrs []value.Value, base value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
	inside := b.NewAnd(b.NewICmp(enum.IPredSGE, base, i64c(0)), b.NewICmp(enum.IPredSLE, b.NewAdd(base, i64c(reduceRow)), p.n))
	return k.ifElse(f, b, inside, func(b *llvm.Block) (*llvm.Block, []value.Value) {
		return b, rowTerms(b, r, rowLoads(b, ptrs, nil, base), nil, acc)
	}, func(b *llvm.Block) (*llvm.Block, []value.Value) {
		b, padded := k.padPiece(f, b, ptrs, base, p.n)
		mask := pieceMask(b, base, p.n)
		return b, rowTerms(b, r, rowLoads(b, padded, nil, i64c(0)), mask, acc)
	})
}

// pieceMask emits the mask of the elements base..base+127 that lie in
// [0, n).
func pieceMask(b *llvm.Block, base, n value.Value) value.Value {
	below := rowMask(b, base, n)
	above := b.NewICmp(enum.IPredSGE, rowIndexes(b, base), broadcast(b, lanes(reduceRow), i64c(0)))
	return b.NewAnd(below, above)
}

// padPiece copies the elements of the rows ptrs in [max(base, 0),
// min(base+128, n)) into rows of 128 floats on f's stack, element j at
// j − base, +0 elsewhere, and returns those (padRows' copy for a row that
// may begin before the piece as well as end past it).
func (k *kernel) padPiece(f *llvm.Func, b *llvm.Block, ptrs []value.Value, base, n value.Value) (*llvm.Block, []value.Value) {
	from := b.NewSelect(b.NewICmp(enum.IPredSLT, base, i64c(0)), i64c(0), base)
	end := b.NewAdd(base, i64c(reduceRow))
	to := b.NewSelect(b.NewICmp(enum.IPredSLT, end, n), end, n)
	var rows []value.Value
	for _, p := range ptrs {
		row := k.stackRow(f, b)
		b = k.forLoop(f, b, "pad", from, to, i64c(1), func(b *llvm.Block, j value.Value) *llvm.Block {
			st := b.NewStore(load(b, f32, b.NewGetElementPtr(f32, p, j), 4), b.NewGetElementPtr(f32, row, b.NewSub(j, base)))
			st.Align, st.Volatile = 4, true
			return b
		})
		rows = append(rows, row)
	}
	return b, rows
}
