package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fibergen/fibergen/generated/disk"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// pieceCase is one call of the norms' piece: examples [lo, hi) of k rows of
// stride floats, the piece n of them from coordinate from of each row, its
// first at position first of its first chunk; two sets or one; bad, if not
// 0, an entry of example lo's piece.
type pieceCase struct {
	k, stride, from, n, first, lo, hi int
	two                               bool
	bad                               float32
}

func (c pieceCase) String() string {
	return fmt.Sprintf("k=%d/stride=%d/from=%d/n=%d/first=%d/[%d,%d)/two=%v/bad=%v", c.k, c.stride, c.from, c.n, c.first, c.lo, c.hi, c.two, c.bad)
}

// pieceCases reach every path of the piece: a piece inside one row, one
// that starts or ends inside a row or inside a lane's four, one of whole
// rows, one that ends on a chunk's edge, one across two chunks and across
// several, one coordinate, none, no examples and a part of the examples, a
// NaN and an Inf.
func pieceCases() []pieceCase {
	var cases []pieceCase
	for i, nf := range [][2]int{{0, 0}, {1, 0}, {1, 127}, {1, 4095}, {3, 5}, {5, 126}, {128, 0}, {128, 1}, {129, 64},
		{300, 3}, {4096, 0}, {4093, 3}, {2 * 128, 4}, {127, 1}, {300, 4000}, {2, 4095}, {3*4096 + 7, 5}, {9000, 4096 - 128}} {
		for _, two := range []bool{false, true} {
			k := 1 + i%4
			cases = append(cases, pieceCase{k: k, stride: nf[0] + i, from: i, n: nf[0], first: nf[1], lo: 0, hi: k, two: two})
		}
	}
	return append(cases,
		pieceCase{k: 5, stride: 7000, from: 9, n: 6000, first: 17, lo: 2, hi: 4, two: true},
		pieceCase{k: 3, stride: 10, from: 0, n: 10, first: 0, lo: 1, hi: 1},
		pieceCase{k: 0, stride: 10, from: 0, n: 10, first: 3, lo: 0, hi: 0},
		pieceCase{k: 2, stride: 200, from: 1, n: 150, first: 100, lo: 0, hi: 2, bad: float32(math.NaN())},
		pieceCase{k: 2, stride: 200, from: 1, n: 150, first: 4000, lo: 0, hi: 2, two: true, bad: float32(math.Inf(1))},
	)
}

// accStride is the lane accumulators of one example of case c: 32 per
// chunk the piece spans, and 32 more that must stay untouched.
func (c pieceCase) accStride() int { return 32 * ((c.first+c.n)/4096 + 2) }

// pieceInputs returns the rows of case c and lane accumulators that hold
// earlier pieces' sums.
func pieceInputs(c pieceCase) (cur, look, acc []float32) {
	r := rand.New(rand.NewPCG(uint64(c.n), uint64(c.first)))
	rows := func() []float32 {
		x := make([]float32, c.k*c.stride)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
		}
		if c.bad != 0 && c.n > 0 {
			x[c.lo*c.stride+c.from+c.n/2] = c.bad
		}
		return x
	}
	cur = rows()
	if c.two {
		look = rows()
	}
	acc = make([]float32, c.k*c.accStride()+3)
	for i := range acc {
		acc[i] = float32(r.Float64() * 10)
	}
	return cur, look, acc
}

// TestNormsPieceHostMatchesGo holds the norms' piece host function to the
// generated Go reference (disk.PrivatizeNormsPiece) bit for bit, the
// accumulators of other chunks and examples untouched: every variant this
// CPU runs, an optimizer with a two-point observation and one without.
func TestNormsPieceHostMatchesGo(t *testing.T) {
	for _, name := range []string{"disk", "dp_sgd"} {
		for _, isa := range hostISAs(t) {
			k := privatizeKernelsAll(t, name, isa)
			for _, c := range pieceCases() {
				if c.two && !twoPoint(name) {
					continue
				}
				t.Run(name+"/"+isa+"/"+c.String(), func(t *testing.T) { checkNormsPiece(t, k, c) })
			}
		}
	}
}

func checkNormsPiece(t *testing.T, k *hostkernel.Privatize, c pieceCase) {
	cur, look, acc := pieceInputs(c)
	a32, b32 := disk.PrivatizeWeights(0.3)
	mode := uint32(0)
	if c.two {
		mode = 1
	}
	want := append([]float32(nil), acc...)
	disk.PrivatizeNormsPiece(want, cur[c.from:], tailOf(look, c.from), c.stride, c.n, c.first, c.accStride(), a32, b32, c.lo, c.hi)
	err := k.NormsPiece(hostkernel.PieceArgs{Cur: cur[c.from:], Look: tailOf(look, c.from), Acc: acc, Stride: int64(c.stride),
		N: int64(c.n), First: int64(c.first), AccStride: int64(c.accStride()), Lo: int64(c.lo), Hi: int64(c.hi), A: a32, B: b32, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	if d := floatbits.Diff(want, acc); d != "" {
		t.Fatalf("accumulators differ: kernel%s", d)
	}
}

// tailOf is x[from:], nil for nil.
func tailOf(x []float32, from int) []float32 {
	if x == nil {
		return nil
	}
	return x[from:]
}

// privatizeKernelsAll is privatizeKernels with the norms' piece loaded
// too.
func privatizeKernelsAll(t *testing.T, name, isa string) *hostkernel.Privatize {
	t.Helper()
	pm := generatedManifest(t, name).Kernels.Privatize
	syms := append(append([]string(nil), pm.HostFunctions...), pm.HostPiece)
	p, err := hostkernel.OpenPrivatizeISA(hostSharedObject(t, optimizerNamed(name)), syms, isa)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if !p.HasPiece() {
		t.Fatal("the norms' piece is not loaded")
	}
	return p
}

// TestNormsPieceArgErrors checks that the piece refuses arguments that
// would read or write out of bounds, and a shared object without it.
func TestNormsPieceArgErrors(t *testing.T) {
	k := privatizeKernelsAll(t, "disk", "")
	cur := make([]float32, 2*10)
	good := hostkernel.PieceArgs{Cur: cur, Acc: make([]float32, 64), Stride: 10, N: 10, AccStride: 32, Lo: 0, Hi: 2}
	for _, c := range []struct {
		name string
		edit func(a *hostkernel.PieceArgs)
	}{
		{"short cur", func(a *hostkernel.PieceArgs) { a.Cur = cur[:19] }},
		{"mode 1 without look", func(a *hostkernel.PieceArgs) { a.Mode = 1 }},
		{"short look", func(a *hostkernel.PieceArgs) { a.Mode, a.Look = 1, cur[:15] }},
		{"short accumulators", func(a *hostkernel.PieceArgs) { a.Acc = a.Acc[:63] }},
		{"stride below n", func(a *hostkernel.PieceArgs) { a.Stride = 9 }},
		{"first 4096", func(a *hostkernel.PieceArgs) { a.First = 4096 }},
		{"first -1", func(a *hostkernel.PieceArgs) { a.First = -1 }},
		{"across a chunk's edge with one chunk's accumulators", func(a *hostkernel.PieceArgs) { a.First = 4090 }},
		{"accumulators' stride below a chunk's", func(a *hostkernel.PieceArgs) { a.AccStride = 31 }},
		{"examples backwards", func(a *hostkernel.PieceArgs) { a.Lo, a.Hi = 2, 1 }},
		{"mode 2", func(a *hostkernel.PieceArgs) { a.Mode = 2 }},
	} {
		a := good
		c.edit(&a)
		if err := k.NormsPiece(a); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := k.NormsPiece(good); err != nil {
		t.Errorf("good arguments: %v", err)
	}
	old := privatizeKernels(t, "disk", "")
	if err := old.NormsPiece(good); err == nil || old.HasPiece() {
		t.Errorf("without the piece: HasPiece %v, error %v", old.HasPiece(), err)
	}
}
