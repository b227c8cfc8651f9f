package hostkernel

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
)

// Diagnostic is a diagnostic's loaded host function (docs/kernels.md,
// "Diagnostics"), e.g. fiber_clamp_mass_cpu:
//
//	void f(float *const *buffers, const float *scalars, int64_t n,
//	       int64_t lo, int64_t hi, float *num, float *den)
//
// which computes num[c] and den[c], the partial sums of chunk c of the n
// coordinates, for the chunks [lo, hi).
type Diagnostic struct{ entry }

// OpenDiagnostic loads symbol from the shared object at path in the best
// variant, as Open does; numBuffers and numScalars are the step's.
func OpenDiagnostic(path, symbol string, numBuffers, numScalars int) (*Diagnostic, error) {
	return OpenDiagnosticISA(path, symbol, "", numBuffers, numScalars)
}

// OpenDiagnosticISA is OpenDiagnostic for the variant named isa, as
// OpenISA.
func OpenDiagnosticISA(path, symbol, isa string, numBuffers, numScalars int) (*Diagnostic, error) {
	e, err := openEntry(path, symbol, isa, numBuffers, numScalars)
	if err != nil {
		return nil, err
	}
	return &Diagnostic{e}, nil
}

// Run computes the partials of the chunks [lo, hi) of the n coordinates
// of bufs (theta, g, the states) into num and den, one per chunk of
// reduce.ReduceChunk coordinates.
func (d *Diagnostic) Run(bufs [][]float32, scalars []float32, n int, lo, hi int, num, den []float32) error {
	return d.RunHost(floats(bufs), scalars, n, lo, hi, num, den)
}

// RunHost is Run on buffers of any storage (Kernel.RunHost).
func (d *Diagnostic) RunHost(bufs []backend.Host, scalars []float32, n int, lo, hi int, num, den []float32) error {
	if err := d.check(bufs, scalars, n, lo, hi, num, den); err != nil || lo == hi {
		return err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := pointers(&pin, bufs)
	for _, p := range []*float32{&scalars[0], &num[0], &den[0]} {
		pin.Pin(p)
	}
	pin.Pin(&ptrs[0])
	purego.SyscallN(d.fn, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&scalars[0])), uintptr(n),
		uintptr(lo), uintptr(hi), uintptr(unsafe.Pointer(&num[0])), uintptr(unsafe.Pointer(&den[0])))
	return nil
}

// check validates the arguments of Run.
func (d *Diagnostic) check(bufs []backend.Host, scalars []float32, n int, lo, hi int, num, den []float32) error {
	if err := d.checkChunks("the diagnostic", bufs, scalars, n, int64(lo), int64(hi)); err != nil {
		return err
	}
	if len(num) < hi || len(den) < hi {
		return fmt.Errorf("hostkernel: %s: %d and %d partials for %d chunks", d.Name, len(num), len(den), hi)
	}
	return nil
}

// checkChunks validates the arguments that a function over the chunks
// [lo, hi) of n coordinates of bufs takes (a diagnostic, the reduction
// pass); what names it once closed.
func (e *entry) checkChunks(what string, bufs []backend.Host, scalars []float32, n int, lo, hi int64) error {
	chunks := int64(reduce.ReduceChunks(n))
	switch {
	case e.fn == 0:
		return fmt.Errorf("hostkernel: %s is closed", what)
	case len(bufs) != e.NumBuffers || len(scalars) != e.NumScalars:
		return fmt.Errorf("hostkernel: %s takes %d buffers and %d scalars, got %d and %d", e.Name, e.NumBuffers, e.NumScalars, len(bufs), len(scalars))
	case lo < 0 || hi < lo || hi > chunks:
		return fmt.Errorf("hostkernel: %s: chunks [%d, %d) outside [0, %d)", e.Name, lo, hi, chunks)
	}
	for i, b := range bufs {
		if b.Len() < n {
			return fmt.Errorf("hostkernel: %s: buffer %d holds %d values, not %d", e.Name, i, b.Len(), n)
		}
	}
	return nil
}
