package runtime

import (
	"math"

	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// The Go reference of the privatize kernels, for the Go backend and a CPU
// without a shared object: the functions every generated package has
// (codegen/go's helpers/privatize.go.txt and reduce.go.txt), the same
// operations in the same order, so the same bits.

// privReference runs phase 0 (norms), 1 (scales) or 2 (sum) of a.
func privReference(phase int, a hostkernel.PrivatizeArgs) {
	var look []float32
	if a.Mode == 1 {
		look = a.Look
	}
	n, lo, hi := int(a.N), int(a.Lo), int(a.Hi)
	u := privMix(a.Cur, look, a.A, a.B)
	switch phase {
	case 0:
		nchunks := int(hostkernel.Chunks(a.N))
		for t := lo; t < hi; t++ {
			row := t / nchunks * n
			a.Partials[t] = reduceChunk(t%nchunks, n, func(i int) float32 {
				x := u(row + i)
				return float32(x * x)
			})
		}
	case 1:
		nchunks := int(hostkernel.Chunks(a.N))
		for x := lo; x < hi; x++ {
			norm2 := 0.0
			for _, p := range a.Partials[x*nchunks : (x+1)*nchunks] {
				norm2 = norm2 + float64(p)
			}
			a.Scales[x] = clipScale(norm2, a.Clip)
		}
	case 2:
		batch := float32(a.Batch)
		for i := lo; i < hi; i++ {
			var acc float32
			for x, s := range a.Scales[:a.Batch] {
				acc = float32(acc + float32(s*u(x*n+i)))
			}
			a.Out[i] = acc / batch
		}
	}
}

// privMix returns u at index i of the rows: cur[i], or a·look[i] + b·cur[i].
func privMix(cur, look []float32, a, b float32) func(i int) float32 {
	if look == nil {
		return func(i int) float32 { return cur[i] }
	}
	return func(i int) float32 { return float32(float32(a*look[i]) + float32(b*cur[i])) }
}

// reduceChunk is the kernels' chunked reduction of term over chunk c of
// [0, n): 32 lanes, coordinate c·4096 + j in lane (j mod 128)/4, then the
// butterfly tree (docs/kernels.md, "Reductions").
func reduceChunk(c, n int, term func(i int) float32) float32 {
	var acc [32]float32
	start, end := c*4096, min((c+1)*4096, n)
	for i := start; i < end; i++ {
		l := (i - start) % 128 / 4
		acc[l] = float32(acc[l] + term(i))
	}
	for off := 16; off >= 1; off /= 2 {
		var next [32]float32
		for l := range acc {
			next[l] = float32(acc[l] + acc[l^off])
		}
		acc = next
	}
	return acc[0]
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

// clipScales is ghost clipping's scales (the generated ClipScales): the
// mixed norm² in float64, clamped at 0. It returns the first example whose
// norm² is not finite, or -1.
func clipScales(scales []float32, lookNorm, curNorm, dot []float64, a, clip float64) int {
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
