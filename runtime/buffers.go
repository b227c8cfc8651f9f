package runtime

// bufferStagger is the distance, in float32s, between the offsets in their
// 4 KiB pages at which consecutive buffers start (320 bytes: five cache
// lines, so each stays 64-byte aligned where its allocation is).
//
// Buffers of a power-of-two size, allocated one after the other, all start
// at the same offset in their pages, and a step that streams through seven
// of them at one index then loads from addresses that equal a just-stored
// one modulo 4096: the CPU takes each such load for a possible
// store-to-load forward and stalls it, and the buffers compete for the
// same cache sets. fiber's host step at n = 64M took 2.05 ns a coordinate
// against 1.16 at 48M (docs/benchmarks.md); staggered, it runs at the
// speed of the sizes in between.
const bufferStagger = 80

// newBuffer returns n zero float32s for the k-th of an optimizer's flat
// buffers (theta, g, then the states), starting k·bufferStagger floats into
// its allocation.
func newBuffer(k, n int) []float32 {
	pad := k * bufferStagger % 1024
	return make([]float32, pad+n)[pad : pad+n : pad+n]
}
