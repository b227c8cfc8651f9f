package reduce

import "math"

// ReduceChunk is the number of coordinates of one chunk of a reduction.
const ReduceChunk = 4096

// ReduceChunks is the number of chunks of n coordinates.
func ReduceChunks(n int) int { return (n + ReduceChunk - 1) / ReduceChunk }

// SumChunk returns the sum of term(i) over chunk c of [0, n) in the
// order of fibergen's kernels (docs/kernels.md, "Reductions"): coordinate
// i = c·ReduceChunk + j goes to lane (j mod 128)/4 of 32 float32
// accumulators, each adding its terms in increasing i, then the butterfly
// tree acc_l = acc_l + acc_(l xor off) for off = 16, 8, 4, 2, 1; the sum is
// lane 0's.
func SumChunk(c, n int, term func(i int) float32) float32 {
	var acc [32]float32
	start, end := c*ReduceChunk, min((c+1)*ReduceChunk, n)
	for i := start; i < end; i++ {
		l := (i - start) % reduceRow / 4
		acc[l] = float32(acc[l] + term(i))
	}
	return LaneTree(acc)
}

// reduceRow is the number of coordinates of one row of a chunk's
// reduction: 32 lanes of 4 consecutive coordinates.
const reduceRow = 128

// LaneTree is the end of a chunk's reduction: the butterfly tree
// acc_l = acc_l + acc_(l xor off) for off = 16, 8, 4, 2, 1 over the 32 lane
// accumulators; the sum is lane 0's, so only the lanes below off, which
// reach it, are computed (each with the tree's operands in its order).
func LaneTree(acc [32]float32) float32 {
	for off := 16; off >= 1; off /= 2 {
		for l := range off { // the lanes that reach lane 0; l xor off = l + off
			acc[l] = float32(acc[l] + acc[l+off])
		}
	}
	return acc[0]
}

// Ratio is a diagnostic's value from its chunk partials: the float64 sums
// of num and of den in chunk order, num/den, and 0 when den is 0.
func Ratio(num, den []float32) float64 {
	var sn, sd float64
	for c := range num {
		sn += float64(num[c])
		sd += float64(den[c])
	}
	if sd == 0 {
		return 0
	}
	return sn / sd
}

// Total is a sum from its chunk partials: their float64 sum in chunk
// order, as a per-tensor reduction finishes on the host.
func Total(partials []float32) float64 {
	var s float64
	for _, x := range partials {
		s += float64(x)
	}
	return s
}

// PrivatizeWeights are the float32 weights of the two-point mix
// u = a·look + b·cur: a and 1 − a, computed in float64 and rounded.
func PrivatizeWeights(a float64) (a32, b32 float32) { return float32(a), float32(1 - a) }

// privatizeMix returns u at index i of the per-example gradients: cur[i]
// without look (one set), else a·look[i] + b·cur[i].
func privatizeMix(cur, look []float32, a, b float32) func(i int) float32 {
	if look == nil {
		return func(i int) float32 { return cur[i] }
	}
	return func(i int) float32 { return float32(float32(a*look[i]) + float32(b*cur[i])) }
}

// PrivatizeNorms stores the partial squared norms of the tasks [lo, hi):
// task t is example t / ReduceChunks(n), chunk t % ReduceChunks(n), and
// partials[t] is the reduction of u·u over that chunk of the example's row
// cur[ξ·n:(ξ+1)·n] (and look's, mixed; see PrivatizeSum). It is the
// kernels' <name>_privatize_norms.
func PrivatizeNorms(partials, cur, look []float32, n int, a, b float32, lo, hi int) {
	nchunks := ReduceChunks(n)
	u := privatizeMix(cur, look, a, b)
	for t := lo; t < hi; t++ {
		row := t / nchunks * n
		partials[t] = SumChunk(t%nchunks, n, func(i int) float32 {
			x := u(row + i)
			return float32(x * x)
		})
	}
}

// PrivatizeScales stores the clipping scales of the examples [lo, hi):
// norm² is the float64 sum, in chunk order, of the example's nchunks
// partials, and the scale float32(min(1, clip/sqrt(norm²))), 1 where norm²
// is 0 and NaN where it is not finite (a NaN or ±Inf gradient, or a square
// past float32's range), which the caller must reject.
func PrivatizeScales(scales, partials []float32, nchunks int, clip float64, lo, hi int) {
	for x := lo; x < hi; x++ {
		norm2 := 0.0
		for _, p := range partials[x*nchunks : (x+1)*nchunks] {
			norm2 = norm2 + float64(p)
		}
		scales[x] = clipScale(norm2, clip)
	}
}

// clipScale is float32(min(1, clip/sqrt(norm2))): 1 for norm2 0, NaN for a
// norm2 that is not finite.
func clipScale(norm2, clip float64) float32 {
	if !(norm2 < math.Inf(1)) {
		return math.Float32frombits(0x7fc00000)
	}
	if norm2 == 0 {
		return 1
	}
	q := clip / math.Sqrt(norm2)
	if q < 1 {
		return float32(q)
	}
	return 1
}

// ClipScales is the scales of ghost clipping, for a trainer that computes
// the per-example norms itself: with lookNorm nil (one set) norm² is
// curNorm[ξ]², else a²·lookNorm[ξ]² + 2a(1−a)·dot[ξ] + (1−a)²·curNorm[ξ]²
// (dot the inner product ⟨look, cur⟩), in float64 and clamped at 0 against
// rounding; the scale is PrivatizeScales'. It returns the first example
// whose norm² is not finite, or -1.
func ClipScales(scales []float32, lookNorm, curNorm, dot []float64, a, clip float64) int {
	bad := -1
	for x, c := range curNorm {
		norm2 := float64(c * c)
		if lookNorm != nil {
			b := 1 - a
			norm2 = float64(float64(float64(a*a)*float64(lookNorm[x]*lookNorm[x]))+float64(float64(2*a*b)*dot[x])) + float64(float64(b*b)*norm2)
			if norm2 < 0 {
				norm2 = 0
			}
		}
		scales[x] = clipScale(norm2, clip)
		if scales[x] != scales[x] && bad < 0 {
			bad = x
		}
	}
	return bad
}

// PrivatizeSum stores the clipped sum over divisor of the coordinates
// [lo, hi): out[i] = (Σ_ξ scales[ξ]·u_ξ[i]) / divisor over the len(scales)
// examples given, the sum a float32 from +0 in example order,
// u_ξ[i] = cur[ξ·n+i] without look, else a·look[ξ·n+i] + b·cur[ξ·n+i]. The
// divisor is the expected batch size, not the number of examples (Poisson
// sampling gives a random number, possibly 0, whose sum is then +0). It is
// the kernels' <name>_privatize_sum.
func PrivatizeSum(out, cur, look, scales []float32, n int, a, b, divisor float32, lo, hi int) {
	u := privatizeMix(cur, look, a, b)
	for i := lo; i < hi; i++ {
		var acc float32
		for x, s := range scales {
			acc = float32(acc + float32(s*u(x*n+i)))
		}
		out[i] = acc / divisor
	}
}

// Privatize writes into out the clipped sum over divisor of rows
// per-example gradients of len(out) coordinates each (rows of cur, and of
// look for a two-point observation with weight a; look nil: cur alone),
// each clipped to norm clip: the three phases one after the other, on one
// core. The divisor is the expected batch size (float32(B)); rows may be
// any number, 0 included. If an example's squared norm is not finite it
// returns that example and leaves out unchanged; else -1.
func Privatize(out, cur, look []float32, rows int, divisor float32, a, clip float64) int {
	n := len(out)
	a32, b32 := PrivatizeWeights(a)
	nchunks := ReduceChunks(n)
	partials := make([]float32, rows*nchunks)
	PrivatizeNorms(partials, cur, look, n, a32, b32, 0, len(partials))
	scales := make([]float32, rows)
	PrivatizeScales(scales, partials, nchunks, clip, 0, rows)
	for x, s := range scales {
		if s != s {
			return x
		}
	}
	PrivatizeSum(out, cur, look, scales, n, a32, b32, divisor, 0, n)
	return -1
}

// Segment is one tensor's part of the per-example gradients, read where
// the trainer left it: its Size coordinates are the flat coordinates
// [Offset, Offset+Size), and example ξ's are Cur[ξ·Size:(ξ+1)·Size] (and
// Look's; Look nil for one set). Segments in order of Offset, each starting
// where the one before ends, tile the rows that Privatize reads as one
// matrix.
type Segment struct {
	Offset, Size int
	Cur, Look    []float32
}

// PrivatizeNormsPiece adds the terms u·u of one tensor's coordinates (a
// piece of the rows) to the lane accumulators of the chunks they lie in,
// for each example ξ in [lo, hi): the piece is n coordinates, example ξ's
// at cur[ξ·stride:ξ·stride+n] (and look's, mixed as PrivatizeSum mixes
// them), its first at position first (< ReduceChunk) of its first chunk;
// its coordinate j, at position p = first + j counted from that chunk's
// start, goes to lane (p mod 128)/4 of chunk p / ReduceChunk, whose 32
// accumulators are acc[ξ·accStride + 32·(p/ReduceChunk):][:32]. The pieces
// of the rows added in order from +0 accumulators and then LaneTree give
// PrivatizeNorms' partials, bit for bit. It is the kernels'
// <name>_privatize_norms_piece.
func PrivatizeNormsPiece(acc, cur, look []float32, stride, n, first, accStride int, a, b float32, lo, hi int) {
	u := privatizeMix(cur, look, a, b)
	for x := lo; x < hi; x++ {
		for j := range n {
			v := u(x*stride + j)
			p := first + j
			l := x*accStride + 32*(p/ReduceChunk) + p%reduceRow/4
			acc[l] = float32(acc[l] + float32(v*v))
		}
	}
}

// NormsPiece adds segment s's terms to the lane accumulators of the
// examples [lo, hi), as PrivatizeNormsPiece with acc starting at the
// accumulators of s's first chunk, first = s.Offset mod ReduceChunk.
type NormsPiece func(acc []float32, s Segment, first, accStride, lo, hi int) error

// SegmentNorms stores the norm partials partials[ξ·ReduceChunks(n) + c] of
// the examples ξ in [lo, hi), every chunk, from the segments (which tile
// [0, n)): it zeroes their lane accumulators acc[32·ξ·ReduceChunks(n):]
// (32 per chunk), adds each segment with piece in order, and ends each
// chunk with LaneTree.
func SegmentNorms(partials, acc []float32, segs []Segment, n, lo, hi int, piece NormsPiece) error {
	nchunks := ReduceChunks(n)
	stride := 32 * nchunks
	clear(acc[lo*stride : hi*stride])
	for _, s := range segs {
		if s.Size == 0 || hi == lo {
			continue
		}
		if err := piece(acc[32*(s.Offset/ReduceChunk):], s, s.Offset%ReduceChunk, stride, lo, hi); err != nil {
			return err
		}
	}
	for x := lo; x < hi; x++ {
		for c := range nchunks {
			partials[x*nchunks+c] = LaneTree([32]float32(acc[x*stride+32*c:]))
		}
	}
	return nil
}

// firstSegment returns the first of the segments that ends after
// coordinate at (len(segs) where none does).
func firstSegment(segs []Segment, at int) int {
	lo, hi := 0, len(segs)
	for lo < hi {
		mid := (lo + hi) / 2
		if segs[mid].Offset+segs[mid].Size <= at {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// SegmentSum stores the clipped sum over divisor of the coordinates
// [lo, hi) as PrivatizeSum, each segment's rows read in place: out holds
// every coordinate of the segments.
func SegmentSum(out []float32, segs []Segment, scales []float32, a, b, divisor float32, lo, hi int) {
	for i := firstSegment(segs, lo); i < len(segs) && segs[i].Offset < hi; i++ {
		s := segs[i]
		from, to := max(lo, s.Offset), min(hi, s.Offset+s.Size)
		PrivatizeSum(out[s.Offset:s.Offset+s.Size], s.Cur, s.Look, scales, s.Size, a, b, divisor, from-s.Offset, to-s.Offset)
	}
}

// PrivatizeSegments is Privatize on rows given as segments (which tile
// [0, len(out)), each with rows examples): the same bits, with every
// tensor read in place. The segments' Look are all nil (one set) or all
// given.
func PrivatizeSegments(out []float32, segs []Segment, rows int, divisor float32, a, clip float64) int {
	n := len(out)
	a32, b32 := PrivatizeWeights(a)
	nchunks := ReduceChunks(n)
	partials, acc := make([]float32, rows*nchunks), make([]float32, 32*rows*nchunks)
	piece := func(acc []float32, s Segment, first, accStride, lo, hi int) error {
		PrivatizeNormsPiece(acc, s.Cur, s.Look, s.Size, s.Size, first, accStride, a32, b32, lo, hi)
		return nil
	}
	_ = SegmentNorms(partials, acc, segs, n, 0, rows, piece)
	scales := make([]float32, rows)
	PrivatizeScales(scales, partials, nchunks, clip, 0, rows)
	for x, s := range scales {
		if s != s {
			return x
		}
	}
	SegmentSum(out, segs, scales, a32, b32, divisor, 0, n)
	return -1
}
