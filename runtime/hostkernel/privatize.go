package hostkernel

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/fibergen/fibergen/reduce"
)

// PrivatizeArgs are the arguments of the privatize host functions, the
// kernels' struct fibergen_privatize (docs/kernels.md, "Privatize"): the
// per-example gradients Cur and Look ([Batch][N] row major, Batch the
// examples given, any number; Look is read in Mode 1 only,
// u = A·look + B·cur), the norm partials ([Batch][chunks(N)]), the scales
// ([Batch]) and Out ([N]), which Sum sets to the clipped sum over Divisor
// (the expected batch size). [Lo, Hi) are the tasks of Norms
// (example·chunks(N) + chunk), the examples of Scales, the coordinates of
// Sum.
type PrivatizeArgs struct {
	Cur, Look             []float32
	Partials, Scales, Out []float32
	Batch, N, Lo, Hi      int64
	Clip                  float64
	A, B                  float32
	Divisor               float32
	Mode                  uint32
}

// privatizeC is struct fibergen_privatize.
type privatizeC struct {
	cur, look, partials, scales, out uintptr
	batch, n, lo, hi                 int64
	clip                             float64
	a, b, divisor                    float32
	mode                             uint32
}

// Privatize is an optimizer's loaded privatize host functions: norms,
// scales and sum, and the norms' piece where the shared object has it.
type Privatize struct {
	Names [4]string // the symbols that run, e.g. "fiber_privatize_norms_cpu_avx512"
	libs  [4]uintptr
	fns   [4]uintptr
}

// OpenPrivatize loads the shared object at path and looks up the host
// functions symbols (norms, scales, sum, and optionally the norms' piece)
// in the best variant, as Open does.
func OpenPrivatize(path string, symbols []string) (*Privatize, error) {
	return OpenPrivatizeISA(path, symbols, "")
}

// OpenPrivatizeISA is OpenPrivatize for the variant named isa, as OpenISA.
func OpenPrivatizeISA(path string, symbols []string, isa string) (*Privatize, error) {
	if len(symbols) != 3 && len(symbols) != 4 {
		return nil, fmt.Errorf("hostkernel: the privatize functions are norms, scales, sum and optionally the norms' piece, not %q", symbols)
	}
	p := &Privatize{}
	for i, s := range symbols {
		f, err := load(path, s, isa)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.Names[i], p.libs[i], p.fns[i] = f.name, f.lib, f.fn
	}
	return p, nil
}

// Close unloads the shared object; p must not be used after.
func (p *Privatize) Close() error {
	var errs []error
	for i, lib := range p.libs {
		if lib != 0 {
			errs = append(errs, purego.Dlclose(lib))
		}
		p.libs[i], p.fns[i] = 0, 0
	}
	return errors.Join(errs...)
}

// chunks is the number of norm partials of one example of n coordinates.
func chunks(n int64) int64 { return int64(reduce.ReduceChunks(int(n))) }

// Norms stores the partial squared norms of the tasks [a.Lo, a.Hi).
func (p *Privatize) Norms(a PrivatizeArgs) error {
	if err := a.checkRows(); err != nil {
		return err
	}
	if err := a.checkRange("tasks", a.Batch*chunks(a.N)); err != nil {
		return err
	}
	return p.call(0, a, int64(len(a.Partials)) >= a.Batch*chunks(a.N))
}

// Scales stores the scales of the examples [a.Lo, a.Hi).
func (p *Privatize) Scales(a PrivatizeArgs) error {
	if err := a.checkRange("examples", a.Batch); err != nil {
		return err
	}
	if !(a.Clip > 0) || a.Clip > 1e300 {
		return fmt.Errorf("hostkernel: clipping norm %v: want a finite C > 0", a.Clip)
	}
	return p.call(1, a, int64(len(a.Partials)) >= a.Batch*chunks(a.N) && int64(len(a.Scales)) >= a.Batch)
}

// Sum stores the clipped sum over a.Divisor of the coordinates
// [a.Lo, a.Hi); with no examples, +0.
func (p *Privatize) Sum(a PrivatizeArgs) error {
	if err := a.checkRange("coordinates", a.N); err != nil {
		return err
	}
	if err := a.checkRowsTo(a.Hi); err != nil {
		return err
	}
	if !(a.Divisor > 0) || math.IsInf(float64(a.Divisor), 1) {
		return fmt.Errorf("hostkernel: divisor %v: want a finite d > 0, the expected batch size", a.Divisor)
	}
	return p.call(2, a, int64(len(a.Scales)) >= a.Batch && int64(len(a.Out)) >= a.Hi)
}

// checkRows checks the gradients' lengths: every example's row whole.
func (a PrivatizeArgs) checkRows() error {
	return a.checkRowsTo(a.N)
}

// checkRowsTo checks the gradients' lengths for a read of the first end
// coordinates of every row (rows a.N apart): the sum of [Lo, Hi) reads to
// Hi, so a group of a matrix's columns is rows of stride N.
func (a PrivatizeArgs) checkRowsTo(end int64) error {
	need := int64(0)
	if a.Batch > 0 {
		need = (a.Batch-1)*a.N + end
	}
	switch {
	case a.Batch < 0 || a.N < 0:
		return fmt.Errorf("hostkernel: %d examples of %d coordinates", a.Batch, a.N)
	case a.Mode > 1:
		return fmt.Errorf("hostkernel: privatize mode %d (want 0 or 1)", a.Mode)
	case int64(len(a.Cur)) < need:
		return fmt.Errorf("hostkernel: cur holds %d values, want %d examples of %d", len(a.Cur), a.Batch, a.N)
	case a.Mode == 1 && int64(len(a.Look)) < need:
		return fmt.Errorf("hostkernel: look holds %d values, want %d examples of %d", len(a.Look), a.Batch, a.N)
	}
	return nil
}

// checkRange checks that [a.Lo, a.Hi) lies in [0, end).
func (a PrivatizeArgs) checkRange(what string, end int64) error {
	if a.Lo < 0 || a.Hi < a.Lo || a.Hi > end {
		return fmt.Errorf("hostkernel: %s [%d, %d) outside [0, %d)", what, a.Lo, a.Hi, end)
	}
	return nil
}

// call runs function i on a once sized (the buffers it writes are long
// enough); an empty range runs nothing.
func (p *Privatize) call(i int, a PrivatizeArgs, sized bool) error {
	switch {
	case p.fns[i] == 0:
		return errors.New("hostkernel: the privatize functions are closed")
	case !sized:
		return fmt.Errorf("hostkernel: %s: a buffer is too short for %d examples of %d coordinates", p.Names[i], a.Batch, a.N)
	case a.Hi == a.Lo:
		return nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptr := func(s []float32) uintptr { return pinned(&pin, s) }
	c := &privatizeC{cur: ptr(a.Cur), look: ptr(a.Look), partials: ptr(a.Partials), scales: ptr(a.Scales), out: ptr(a.Out),
		batch: a.Batch, n: a.N, lo: a.Lo, hi: a.Hi, clip: a.Clip, a: a.A, b: a.B, divisor: a.Divisor, mode: a.Mode}
	pin.Pin(c)
	purego.SyscallN(p.fns[i], uintptr(unsafe.Pointer(c)))
	return nil
}

// PieceArgs are the arguments of the norms' piece host function, the
// kernels' struct fibergen_privatize_piece (docs/kernels.md, "Privatize in
// place"): example ξ's N coordinates of the piece at Cur[ξ·Stride:] (and
// Look's, read in Mode 1), the first at position First (< 4096) of its
// first chunk; the lane accumulators of example ξ's chunks at
// Acc[ξ·AccStride:], 32 per chunk from the piece's first, those of the
// examples [Lo, Hi) loaded, added to and stored.
type PieceArgs struct {
	Cur, Look, Acc                      []float32
	Stride, N, First, AccStride, Lo, Hi int64
	A, B                                float32
	Mode                                uint32
}

// pieceC is struct fibergen_privatize_piece.
type pieceC struct {
	cur, look, acc                      uintptr
	stride, n, first, accStride, lo, hi int64
	a, b                                float32
	mode                                uint32
}

// HasPiece says whether the shared object has the norms' piece (one built
// before it existed does not).
func (p *Privatize) HasPiece() bool { return p.fns[3] != 0 }

// NormsPiece adds a piece to the lane accumulators of the examples
// [a.Lo, a.Hi).
func (p *Privatize) NormsPiece(a PieceArgs) error {
	if err := a.check(); err != nil {
		return err
	}
	switch {
	case p.fns[3] == 0:
		return errors.New("hostkernel: the shared object has no norms piece (rebuild it with fibergen build)")
	case a.Hi == a.Lo || a.N == 0:
		return nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	c := &pieceC{cur: pinned(&pin, a.Cur), look: pinned(&pin, a.Look), acc: pinned(&pin, a.Acc),
		stride: a.Stride, n: a.N, first: a.First, accStride: a.AccStride, lo: a.Lo, hi: a.Hi, a: a.A, b: a.B, mode: a.Mode}
	pin.Pin(c)
	purego.SyscallN(p.fns[3], uintptr(unsafe.Pointer(c)))
	return nil
}

// check checks a piece's arguments: its place in its chunk, the examples,
// and the lengths of the rows and the accumulators.
func (a PieceArgs) check() error {
	switch {
	case a.N < 0 || a.Stride < a.N || a.First < 0 || a.First >= reduce.ReduceChunk || a.Lo < 0 || a.Hi < a.Lo:
		return fmt.Errorf("hostkernel: a norms piece of %d coordinates, stride %d, first %d, examples [%d, %d)", a.N, a.Stride, a.First, a.Lo, a.Hi)
	case a.Mode > 1:
		return fmt.Errorf("hostkernel: privatize mode %d (want 0 or 1)", a.Mode)
	case a.Hi == a.Lo || a.N == 0:
		return nil
	}
	lanes := 32 * ((a.First+a.N-1)/reduce.ReduceChunk + 1) // the accumulators of the chunks it spans
	rows := (a.Hi-1)*a.Stride + a.N
	switch {
	case a.AccStride < lanes || int64(len(a.Acc)) < (a.Hi-1)*a.AccStride+lanes:
		return fmt.Errorf("hostkernel: %d lane accumulators, stride %d, for %d examples of %d", len(a.Acc), a.AccStride, a.Hi, lanes)
	case int64(len(a.Cur)) < rows || a.Mode == 1 && int64(len(a.Look)) < rows:
		return fmt.Errorf("hostkernel: a norms piece reads %d values of each set; cur holds %d, look %d", rows, len(a.Cur), len(a.Look))
	}
	return nil
}

// pinned pins s's data with pin and returns its address, 0 for none.
func pinned(pin *runtime.Pinner, s []float32) uintptr {
	if len(s) == 0 {
		return 0
	}
	d := unsafe.SliceData(s)
	pin.Pin(d)
	return uintptr(unsafe.Pointer(d))
}
