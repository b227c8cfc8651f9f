package reduce

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/lang"
)

// laneOrderSum sums chunk c of xs the way docs/kernels.md describes the
// kernels' reduction, written independently of SumChunk: the lanes first,
// each over its own coordinates in increasing order, then the tree level by
// level.
func laneOrderSum(xs []float32, c int) float32 {
	var lanes [32]float32
	for l := range 32 {
		for row := 0; row < ReduceChunk/128; row++ {
			for k := range 4 {
				if i := c*ReduceChunk + row*128 + 4*l + k; i < len(xs) {
					lanes[l] = lanes[l] + xs[i]
				}
			}
		}
	}
	for _, off := range []int{16, 8, 4, 2, 1} {
		prev := lanes
		for l := range lanes {
			lanes[l] = prev[l] + prev[l^off]
		}
	}
	return lanes[0]
}

func TestSumChunkOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 127, 128, 4095, 4096, 4097, 3*4096 + 129} {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4)))
		}
		for c := range ReduceChunks(n) {
			got := SumChunk(c, n, func(i int) float32 { return xs[i] })
			if want := laneOrderSum(xs, c); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n %d chunk %d: SumChunk %v, the lane order %v", n, c, got, want)
			}
		}
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		num, den []float32
		want     float64
	}{
		{nil, nil, 0},
		{[]float32{0, 0}, []float32{0, 0}, 0},
		{[]float32{1, 2}, []float32{2, 6}, 0.375},
		{[]float32{3}, []float32{3}, 1},
	}
	for _, tt := range tests {
		if got := Ratio(tt.num, tt.den); got != tt.want {
			t.Errorf("Ratio(%v, %v) = %v, want %v", tt.num, tt.den, got, tt.want)
		}
	}
}

// TestClipScales checks ghost clipping against the norms of explicit
// vectors: look = (3, 0), cur = (0, 4) mixed with a = 0.5 is (1.5, 2), of
// norm 2.5, so C = 1 scales it by 0.4.
func TestClipScales(t *testing.T) {
	scales := make([]float32, 2)
	bad := ClipScales(scales, []float64{3, 0}, []float64{4, 0}, []float64{0, 0}, 0.5, 1)
	if bad != -1 || scales[0] != 0.4 || scales[1] != 1 {
		t.Errorf("ClipScales = %v (bad %d), want [0.4 1]", scales, bad)
	}
	if bad := ClipScales(scales, nil, []float64{math.Inf(1)}, nil, 0, 1); bad != 0 {
		t.Errorf("an infinite norm: bad %d, want 0", bad)
	}
}

// TestPrivatizeDivisor checks that the clipped sum is divided by the
// divisor, not by the number of rows: no rows give +0 everywhere, and
// doubling the divisor halves every coordinate exactly (scaling by 2
// commutes with rounding away from the subnormals).
func TestPrivatizeDivisor(t *testing.T) {
	cur := []float32{3, 4, 0.3, 0.4, 0.1, -0.7}
	const n = 2
	for _, rows := range []int{0, 1, 3} {
		byRows, byTwice := []float32{-7, -7}, []float32{-7, -7}
		if bad := Privatize(byRows, cur[:rows*n], nil, rows, float32(max(rows, 1)), 0, 1); bad != -1 {
			t.Fatalf("%d rows: example %d not finite", rows, bad)
		}
		if bad := Privatize(byTwice, cur[:rows*n], nil, rows, float32(2*max(rows, 1)), 0, 1); bad != -1 {
			t.Fatalf("%d rows: example %d not finite", rows, bad)
		}
		for i := range n {
			if rows == 0 && math.Float32bits(byRows[i]) != 0 || byTwice[i] != byRows[i]/2 {
				t.Errorf("%d rows, coordinate %d: %v over rows, %v over twice the rows", rows, i, byRows[i], byTwice[i])
			}
		}
	}
}

// segmentsOf cuts k rows of the matrix m (k rows of sum(sizes) values)
// into segments of the given sizes, each a contiguous [k][size] copy, as
// a trainer's tensors are; m nil gives segments without rows (Look).
func segmentsOf(m []float32, k int, sizes []int) []Segment {
	n, off := 0, 0
	for _, s := range sizes {
		n += s
	}
	segs := make([]Segment, len(sizes))
	for i, size := range sizes {
		segs[i] = Segment{Offset: off, Size: size}
		if m != nil {
			segs[i].Cur = make([]float32, 0, k*size)
			for x := range k {
				segs[i].Cur = append(segs[i].Cur, m[x*n+off:x*n+off+size]...)
			}
		}
		off += size
	}
	return segs
}

// TestPrivatizeSegmentsMatchesRows holds PrivatizeSegments to Privatize
// on the same rows, bit for bit: segment edges inside a 128-row, inside a
// lane's four, at chunk edges, one-element and empty segments, no, one and
// many examples, one set and two.
func TestPrivatizeSegmentsMatchesRows(t *testing.T) {
	layouts := [][]int{
		{1}, {0}, {5, 0, 3}, {130, 1, 0, 2000, 5000}, {4096, 4096}, {4095, 1, 4097},
		{1, 4094, 2, 127, 129}, {3, 3 * 4096, 126, 1}, {64, 64, 64, 0, 0, 64},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, sizes := range layouts {
		n := 0
		for _, s := range sizes {
			n += s
		}
		for _, k := range []int{0, 1, 3, 17} {
			for _, a := range []float64{-1, 0.3} { // -1: one set
				cur, look := randomRows(r, k*n), randomRows(r, k*n)
				want, got := make([]float32, n), make([]float32, n)
				segs := segmentsOf(cur, k, sizes)
				wantBad, gotBad := 0, 0
				if a < 0 {
					wantBad = Privatize(want, cur, nil, k, 8, 0, 1)
					gotBad = PrivatizeSegments(got, segs, k, 8, 0, 1)
				} else {
					for i, l := range segmentsOf(look, k, sizes) {
						segs[i].Look = l.Cur
					}
					wantBad = Privatize(want, cur, look, k, 8, a, 1)
					gotBad = PrivatizeSegments(got, segs, k, 8, a, 1)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gotBad != wantBad {
						t.Fatalf("sizes %v, k %d, a %v: coordinate %d %v (bad %d), the rows give %v (bad %d)",
							sizes, k, a, i, got[i], gotBad, want[i], wantBad)
					}
				}
			}
		}
	}
}

// randomRows is n values spread over many magnitudes, so that the order
// of the additions shows in the bits.
func randomRows(r *rand.Rand, n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-4)))
	}
	return xs
}

// TestChunkFolds holds the per-tensor max and min to what they mean, and
// the sum through Chunk to SumChunk: without NaN the fold order cannot
// change a max of distinct values, so it must be the plain maximum; a NaN
// term makes the chunk NaN; an empty chunk and Finish of no chunks give
// the identity.
func TestChunkFolds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, 127, 4095, 4097, 3*4096 + 129} {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(r.NormFloat64())
		}
		term := func(i int) float32 { return xs[i] }
		for c := range ReduceChunks(n) {
			lo, hi := c*ReduceChunk, min((c+1)*ReduceChunk, n)
			want := map[lang.Op]float32{lang.Max: slices.Max(xs[lo:hi]), lang.Min: slices.Min(xs[lo:hi]), lang.Add: SumChunk(c, n, term)}
			for op, w := range want {
				if got := Chunk(op, c, n, term); math.Float32bits(got) != math.Float32bits(w) {
					t.Errorf("n %d chunk %d %s: %v, want %v", n, c, op, got, w)
				}
			}
		}
		xs[n/2] = float32(math.NaN())
		for _, op := range []lang.Op{lang.Max, lang.Min} {
			if got := Chunk(op, (n/2)/ReduceChunk, n, term); !math.IsNaN(float64(got)) {
				t.Errorf("n %d %s with a NaN term: %v, want NaN", n, op, got)
			}
		}
	}
	for op, want := range map[lang.Op]float64{lang.Max: math.Inf(-1), lang.Min: math.Inf(1), lang.Add: 0} {
		if got := Finish(op, nil); got != want {
			t.Errorf("Finish(%s) of no chunks: %v, want %v", op, got, want)
		}
	}
	if got := Finish(lang.Max, []float32{1, float32(math.NaN()), 3}); !math.IsNaN(got) {
		t.Errorf("Finish(max) over a NaN partial: %v, want NaN", got)
	}
}

// laneOrderFold folds chunk c of xs as docs/kernels.md describes the
// kernels' reduction with combine for +, written independently of
// FoldChunk as laneOrderSum is of SumChunk.
func laneOrderFold(xs []float32, c int, identity float32, combine func(acc, x float32) float32) float32 {
	var lanes [32]float32
	for l := range lanes {
		lanes[l] = identity
		for row := 0; row < ReduceChunk/128; row++ {
			for k := range 4 {
				if i := c*ReduceChunk + row*128 + 4*l + k; i < len(xs) {
					lanes[l] = combine(lanes[l], xs[i])
				}
			}
		}
	}
	for _, off := range []int{16, 8, 4, 2, 1} {
		prev := lanes
		for l := range lanes {
			lanes[l] = combine(prev[l], prev[l^off])
		}
	}
	return lanes[0]
}

// TestFoldChunkOrder holds the max and min of chunks of ±0 ties and NaNs
// of several payloads, whose bits only the order decides, to the lane
// order.
func TestFoldChunkOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 5, 127, 4095, 4097, 3*4096 + 129} {
		for _, nans := range []bool{false, true} {
			xs := make([]float32, n)
			for i := range xs {
				xs[i] = float32(math.Copysign(0, r.NormFloat64()))
				if nans && r.IntN(500) == 0 {
					xs[i] = math.Float32frombits(0x7fc00000 | uint32(r.IntN(1<<22)))
				}
			}
			for _, op := range []lang.Op{lang.Max, lang.Min} {
				id, combine := Fold(op)
				for c := range ReduceChunks(n) {
					got := FoldChunk(c, n, id, combine, func(i int) float32 { return xs[i] })
					if want := laneOrderFold(xs, c, id, combine); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("n %d chunk %d %s (NaNs %v): FoldChunk %#x, the lane order %#x", n, c, op, nans, math.Float32bits(got), math.Float32bits(want))
					}
				}
			}
		}
	}
}
