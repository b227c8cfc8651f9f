package hostkernel

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
)

// Reduce is the reduction pass's loaded host function (docs/kernels.md,
// "Reductions"), e.g. lamb_reduce_cpu:
//
//	void f(float *const *buffers, const float *scalars, int64_t n,
//	       const struct fibergen_range *r, float *partials, float *kept)
//
// which computes partials[i·chunks(n) + c], term i's partial sum over chunk
// c of the n coordinates, for the chunks [r->lo, r->hi), coordinate j
// having global index r->offset + j and g privatized in r's noise; where
// kept is not null it stores coordinate j's privatized g at kept[j].
type Reduce struct {
	entry
	Terms int
}

// OpenReduce loads symbol from the shared object at path in the best
// variant, as Open does, for numBuffers buffers, numScalars scalars (the
// reduce block's, then sqrt(sigma_w2)) and terms sums.
func OpenReduce(path, symbol string, numBuffers, numScalars, terms int) (*Reduce, error) {
	e, err := openEntry(path, symbol, "", numBuffers, numScalars)
	if err != nil {
		return nil, err
	}
	return &Reduce{entry: e, Terms: terms}, nil
}

// Run computes the partials of the chunks [r.Lo, r.Hi) of the n
// coordinates of bufs (theta, g, the states) into partials and, where kept
// is not nil (n floats), the chunks' privatized g into kept.
func (d *Reduce) Run(bufs [][]float32, scalars []float32, n int, r Range, partials, kept []float32) error {
	return d.RunHost(floats(bufs), scalars, n, r, partials, kept)
}

// RunHost is Run on buffers of any storage (Kernel.RunHost).
func (d *Reduce) RunHost(bufs []backend.Host, scalars []float32, n int, r Range, partials, kept []float32) error {
	if err := d.check(bufs, scalars, n, r, partials, kept); err != nil || r.Lo == r.Hi {
		return err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := pointers(&pin, bufs)
	rp := &Range{}
	*rp = r
	for _, p := range []any{&ptrs[0], &scalars[0], rp, &partials[0]} {
		pin.Pin(p)
	}
	keep := pinned(&pin, kept) // 0: nothing kept
	purego.SyscallN(d.fn, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&scalars[0])), uintptr(n),
		uintptr(unsafe.Pointer(rp)), uintptr(unsafe.Pointer(&partials[0])), keep)
	return nil
}

// check validates the arguments of Run.
func (d *Reduce) check(bufs []backend.Host, scalars []float32, n int, r Range, partials, kept []float32) error {
	chunks := int64(reduce.ReduceChunks(n))
	if err := d.checkChunks("the reduction pass", bufs, scalars, n, r.Lo, r.Hi); err != nil {
		return err
	}
	switch {
	case int64(len(partials)) < int64(d.Terms)*chunks:
		return fmt.Errorf("hostkernel: %s: %d partials for %d terms of %d chunks", d.Name, len(partials), d.Terms, chunks)
	case kept != nil && len(kept) < n:
		return fmt.Errorf("hostkernel: %s: %d kept floats for %d coordinates", d.Name, len(kept), n)
	case r.Offset < 0 || r.Offset > (1<<62):
		return fmt.Errorf("hostkernel: offset %d out of range", r.Offset)
	}
	return nil
}
