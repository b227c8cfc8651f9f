package llvmgen

import (
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file emits the norms of per-example gradients read in place, one
// tensor at a time (docs/kernels.md, "Privatize in place"): the host
// function <name>_privatize_norms_piece_cpu adds the terms u·u of a piece
// of one chunk — the coordinates of one tensor that lie in that chunk — to
// the 32 lane accumulators of each example, which it loads and stores, so
// that the pieces of a chunk, added in order, and the lane tree give the
// norms' partial of that chunk bit for bit (package reduce's
// PrivatizeNormsPiece and SegmentNorms).

// PrivatizePieceHostFunc is the piece's host function, e.g.
// fiber_privatize_norms_piece_cpu (with its _avx2 and _avx512 twins).
func (k *Module) PrivatizePieceHostFunc() string {
	return k.PrivatizeKernel("norms_piece") + hostSuffix
}

// privatizePieceStruct is the piece's only argument: example ξ's
// coordinates of the piece at cur + ξ·stride (and look's, read in mode 1),
// n of them, the first at position phase (0 ≤ phase < 128) of its chunk's
// 128-coordinate row; acc holds 32 lane accumulators per example, those of
// the examples [lo, hi) loaded, added to and stored.
var privatizePieceStruct = newStruct("fibergen_privatize_piece",
	cfield{"cur", cScalars}, cfield{"look", cScalars}, cfield{"acc", cFloatPtr},
	cfield{"stride", cInt64}, cfield{"n", cInt64}, cfield{"phase", cInt64}, cfield{"lo", cInt64}, cfield{"hi", cInt64},
	cfield{"a", cFloat}, cfield{"b", cFloat}, cfield{"mode", ctype{"uint32_t", i32}})

// pieceArgs are the fields of struct fibergen_privatize_piece.
type pieceArgs struct {
	privArgs
	acc, stride, phase value.Value
}

// loadPieceArgs loads the fields of struct fibergen_privatize_piece.
func loadPieceArgs(b *llvm.Block, p *llvm.Param) pieceArgs {
	field := func(name string) value.Value { return privatizePieceStruct.load(b, p, name) }
	return pieceArgs{privArgs: privArgs{cur: field("cur"), look: field("look"), n: field("n"), lo: field("lo"), hi: field("hi"),
		a: field("a"), b: field("b"), mode: field("mode")}, acc: field("acc"), stride: field("stride"), phase: field("phase")}
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

// examplePiece emits the piece of example x: its accumulators loaded, the
// rows of the piece added (row r holds the piece's coordinates
// [128r − phase, 128(r+1) − phase)), the accumulators stored.
func (k *kernel) examplePiece(f *llvm.Func, b *llvm.Block, p pieceArgs, r reduction, ins []value.Value, x value.Value) *llvm.Block {
	var ptrs []value.Value
	for _, in := range ins {
		ptrs = append(ptrs, b.NewGetElementPtr(f32, in, b.NewMul(x, p.stride)))
	}
	accPtr := b.NewBitCast(b.NewGetElementPtr(f32, p.acc, b.NewMul(x, i64c(reduceLanes))), types.NewPointer(types.NewVector(reduceLanes, f32)))
	acc := []value.Value{load(b, types.NewVector(reduceLanes, f32), accPtr, 4)}
	rows := b.NewSDiv(b.NewAdd(b.NewAdd(p.phase, p.n), i64c(reduceRow-1)), i64c(reduceRow))
	b, acc = k.loopCarry(f, b, "piece.row", i64c(0), rows, i64c(1), acc, func(b *llvm.Block, row value.Value, acc []value.Value) (*llvm.Block, []value.Value) {
		base := b.NewSub(b.NewMul(row, i64c(reduceRow)), p.phase)
		inside := b.NewAnd(b.NewICmp(enum.IPredSGE, base, i64c(0)), b.NewICmp(enum.IPredSLE, b.NewAdd(base, i64c(reduceRow)), p.n))
		return k.ifElse(f, b, inside, func(b *llvm.Block) (*llvm.Block, []value.Value) {
			return b, k.rowTerms(b, r, ptrs, base, nil, acc)
		}, func(b *llvm.Block) (*llvm.Block, []value.Value) {
			b, padded := k.padPiece(f, b, ptrs, base, p.n)
			return b, k.rowTerms(b, r, padded, i64c(0), pieceMask(b, base, p.n), acc)
		})
	})
	store(b, acc[0], accPtr, 4)
	return b
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
