package runtime

import (
	"unsafe"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/backend"
)

// bufferStagger is the distance, in bytes, between the offsets in their
// 4 KiB pages at which consecutive buffers start: five cache lines, so each
// stays 64-byte aligned where its allocation is.
//
// Buffers of a power-of-two size, allocated one after the other, all start
// at the same offset in their pages, and a step that streams through seven
// of them at one index then loads from addresses that equal a just-stored
// one modulo 4096: the CPU takes each such load for a possible
// store-to-load forward and stalls it, and the buffers compete for the
// same cache sets. fiber's host step at n = 64M took 2.05 ns a coordinate
// against 1.16 at 48M (docs/benchmarks.md); staggered, it runs at the
// speed of the sizes in between.
const bufferStagger = 320

// newBuffer returns n zero elements for the k-th of an optimizer's flat
// buffers (theta, g, then the states; the bench copy's source and
// destination), starting k·bufferStagger bytes (modulo a page) into its
// allocation.
func newBuffer[T float32 | uint16 | byte](k, n int) []T {
	pad := staggerBytes(k) / int(unsafe.Sizeof(T(0)))
	return make([]T, pad+n)[pad : pad+n : pad+n]
}

// staggerBytes is how far into its allocation the k-th buffer starts.
func staggerBytes(k int) int { return k * bufferStagger % 4096 }

// HostBufferPad is how many float32s into its allocation the runtime
// starts its k-th flat host buffer (ABI order): a trainer that allocates
// the host buffers it gives UseBuffers staggers them alike, for the same
// speed.
func HostBufferPad(k int) int { return staggerBytes(k) / 4 }

// newHostBuffers returns the optimizer's flat buffers of n values, each
// stored as its manifest says (ir.Storage: a bf16 or f16 state holds 16-bit
// values), staggered as newBuffer staggers them.
func (o *Optimizer) newHostBuffers(n int) []backend.Host {
	out := make([]backend.Host, len(o.storages))
	for k, s := range o.storages {
		if s.Narrow() {
			out[k] = backend.Host{DType: s.DType, U16: newBuffer[uint16](k, n)}
		} else {
			out[k] = backend.Float32s(newBuffer[float32](k, n))
		}
	}
	return out
}

// storagesOf is the storage of each buffer of fn, in ABI order.
func storagesOf(fn *ir.Func) []ir.Storage {
	var out []ir.Storage
	for _, b := range ir.Buffers(fn) {
		out = append(out, b.Storage)
	}
	return out
}
