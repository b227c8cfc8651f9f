// Package backend is the seam between the runtime and the places its
// steps run: the one interface, Backend, through which package runtime
// reaches a device — stepping, privatizing, the diagnostics, the
// non-finite guard and device buffers — and the types its methods take.
// The runtime's CPU and Go backends implement it in package runtime,
// CUDA's (and the simulated device's) in package runtime/cuda; a new
// backend implements it in a package of its own (docs/runtime.md, "Adding
// a backend"). The package knows no device and imports none.
package backend

import (
	"errors"
	"fmt"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
)

// Backend runs an optimizer's kernels over its flat buffers — theta, g,
// then the states, in the ABI order of ir/abi.go (ir.ThetaBuffer,
// ir.GradBuffer, ir.FirstState), n floats each — which it was started on
// (its own memory), and, where it has a device, over buffers of the
// trainer's device memory given per call (Memory.Device).
//
// The contract every implementation keeps:
//
//   - Bit-exactness: every method gives the bits the Go reference gives
//     (package ir/interp for the step and the diagnostics, package reduce
//     for privatize), whatever the split of the work: the noise of a
//     coordinate is the Philox draw of (seed, step counter, its global
//     index: Step.Offset plus its index in the memory), drawn in groups of
//     four aligned on global indexes (rng.Privatize), so no split may draw
//     a group twice or change which index a draw belongs to; the
//     diagnostics' and privatize's partial sums are over
//     reduce.ReduceChunk-coordinate chunks, summed in chunk order.
//   - Nothing half done: a method that returns an error must not have
//     changed what the runtime's release rules (runtime/release.go) count
//     on — Step checks every segment before it launches any, and an error
//     after that (a device fault) is a *FaultError, on which the runtime
//     refuses to step again until a checkpoint is loaded; FirstNonFinite
//     changes nothing; Privatize that finds a non-finite example
//     (*NonFiniteExampleError) leaves the destination unchanged.
//   - Own memory vs the trainer's: a backend with no device returns an
//     error for a Memory with Device set; Read, Write, Sync and Rebind
//     work on its own memory only.
//   - One caller at a time: the runtime serialises every call (the
//     Optimizer's lock), so a backend needs no locks of its own.
type Backend interface {
	// Name is the backend's name as runtime.Backend spells it: "cpu", "go",
	// "cuda", "ptxsim", … (the CPU backend says "go" where it runs the
	// reference).
	Name() string
	// Kernel names the compiled entry point the backend steps with where
	// there is a choice of variants (the host kernel's instruction-set
	// variant, e.g. "fiber_cpu_avx512"); "" where there is none.
	Kernel() string

	// Step runs one step over every segment of s in m, each with its own
	// scalars, and waits for it.
	Step(m Memory, s Step) error
	// FirstNonFinite is the non-finite guard: the first index i < n of the
	// gradient buffer of m whose float is NaN or ±Inf, and that float; -1
	// where every one is finite.
	FirstNonFinite(m Memory) (index int, value float32, err error)
	// Privatize computes the clipping scales unless j has them (refusing
	// with a *NonFiniteExampleError an example whose squared norm is not
	// finite, the destination untouched), then writes the clipped sum over
	// j.Divisor into the destination, and returns the scales.
	Privatize(j Privatize) (scales []float32, err error)
	// Partials computes the diagnostic d's partial sums of segment seg of
	// m, one per reduce.ReduceChunk coordinates of the segment, into num
	// and den (len: reduce.ReduceChunks(seg.Hi-seg.Lo)).
	Partials(m Memory, d Diagnostic, seg Segment, num, den []float32) error
	// Reduce runs the reduction pass of r over each of its tensors of m,
	// g privatized with r.Noise as the step privatizes it, into partials
	// (len r.Len()), tensor after tensor (r.Split): a tensor's
	// partials[i·chunks + c] is term i's partial sum (max, min: its
	// combine, ir.Func.ReduceCombines) over chunk c of its
	// reduce.ReduceChunk-coordinate chunks. It writes no buffer of m;
	// with r.Keep it keeps the privatized g for the Step that follows.
	Reduce(m Memory, r Reduce, partials []float32) error
	// Fill sets every float of buffer buf of m to v, and waits.
	Fill(m Memory, buf int, v float32) error

	// Read returns floats [off, off+n) of buffer buf of the own memory.
	Read(buf, off, n int) ([]float32, error)
	// Write copies src into buffer buf of the own memory from off.
	Write(buf, off int, src []float32) error
	// Sync brings the runtime's host buffers (those the backend was
	// started with) up to date with the own memory.
	Sync() error
	// Rebind points the backend at new host buffers of the same shape,
	// which hold the values the old ones held (the trainer's memory moved,
	// runtime.Optimizer.UseBuffers); a backend that keeps copies of its own
	// refuses.
	Rebind(host []Host) error
	// Close syncs the host buffers (as Sync) and releases what the backend
	// holds (device memory, modules, shared objects), even where the sync
	// fails. It may be called on a backend that failed half-way through
	// starting, and more than once.
	Close() error
}

// DevicePtr is an address in the memory of a backend's device: the opaque
// device pointer of the runtime's public API (runtime.DevicePtr), which
// each device backend converts to its driver's own type.
type DevicePtr uint64

// Add returns p advanced by bytes.
func (p DevicePtr) Add(bytes int) DevicePtr { return p + DevicePtr(bytes) }

// Memory names the buffers a call works on. The zero value is the
// backend's own memory (the buffers it was started on, or its device
// copies of them); Device set is the trainer's device memory: one pointer
// per buffer in ABI order, N floats each.
type Memory struct {
	Device []DevicePtr
	N      int
}

// Own reports whether m is the backend's own memory.
func (m Memory) Own() bool { return m.Device == nil }

// Segment is a range [Lo, Hi) of a memory's coordinates that steps with
// one setting of the hypers.
type Segment struct {
	Lo, Hi int
	// Scalars are the kernels' scalar arguments: the host scalars, then
	// σ_w (ir.SigmaWScalar).
	Scalars []float32
	// Host are the interpreter's values of the same setting, for a
	// backend that runs the reference (package ir/interp).
	Host interp.Scalars
}

// Step is one step's arguments besides the memory.
type Step struct {
	Segments []Segment // in order; they cover the coordinates stepped
	Offset   int64     // the global index of the memory's coordinate 0
	// Noise is what the kernel draws into the gradient, N(0, σ_w²) in the
	// scheme its Mode names (rng.Off: none, the gradient is privatized
	// already), and the step counter t (Noise.Step).
	Noise rng.Stream
	// Kept: the kernel reads the gradient the Reduce just before kept
	// (Reduce.Keep), privatized already (Noise.Mode is rng.Off), instead
	// of the memory's gradient buffer.
	Kept bool
}

// KeptGradient is the gradient a backend's last reduction pass kept
// (Reduce.Keep) for the step after it, in memory B of the backend's own
// (host floats, a device pointer), reused by the next pass.
type KeptGradient[B any] struct {
	Buf   B
	fresh bool // kept by the last pass, and not read by a step yet
}

// Passing marks a reduction pass under way: until it ends, nothing kept.
func (k *KeptGradient[B]) Passing() { k.fresh = false }

// Passed marks the end of a pass that kept the gradient in Buf, or not.
func (k *KeptGradient[B]) Passed(keep bool) { k.fresh = keep }

// Take returns whether step s reads the kept gradient (s.Kept), which it
// reads once: the next step reads what the next pass keeps. It refuses a
// step on a kept gradient where the last pass kept none, or one a step
// read already, or where the step would draw noise of its own.
func (k *KeptGradient[B]) Take(s Step) (bool, error) {
	if !s.Kept {
		return false, nil
	}
	if !k.fresh || s.Noise.Mode != rng.Off {
		return false, errors.New("runtime: a step on the kept gradient, with no reduction pass that kept it or with noise of its own")
	}
	k.fresh = false
	return true, nil
}

// Privatize is one privatization: k rows of n floats (per-example
// gradients, and for a two-point optimizer the look-ahead gradients), mixed
// (Mode 1: u = A·look + B·cur), clipped to norm Clip and summed over
// Divisor into the destination.
type Privatize struct {
	// Cur and Look are host rows [Batch][N]; Look is read in Mode 1. Out
	// is the host destination of N floats; nil: the gradient buffer of the
	// backend's own memory.
	Cur, Look, Out []float32
	// Segments, where set, hold the host rows instead of Cur and Look,
	// each tensor's read in place (reduce.Segment; their Look set in
	// Mode 1 only); they tile [0, N). A backend without them refuses.
	Segments []reduce.Segment
	// Device, where set, holds the rows and the destination in the
	// trainer's device memory instead.
	Device   *DeviceRows
	Batch, N int
	A, B     float32 // Mode 1's weights
	Divisor  float32 // float32(DP.BatchSize), exact
	Mode     uint32
	Clip     float64
	Scales   []float32 // given (runtime.ClipScales): only the sum runs
	// RowStride, where set, is the distance between two examples' rows in
	// every segment, instead of its Size: a group of the columns of one
	// matrix (per-group clipping) is one segment of stride N.
	RowStride int
	// ScalesOnly asks a job of segments or of device rows for its scales
	// alone: Out is not written.
	ScalesOnly bool
	// NormsOnly asks a job of segments for its norm partials alone,
	// [Batch][reduce.ReduceChunks(N)], returned in place of the scales (the
	// backend's, valid until its next privatization): Out is not written
	// (per-group clipping folds each group's chunks).
	NormsOnly bool
	// SegmentScales, where set, are the scales of each segment's examples
	// (a group's), given: only the sum runs, each segment with its own.
	SegmentScales [][]float32
}

// DeviceRows are a privatization's rows and destination in device memory
// (Look 0: not read).
type DeviceRows struct {
	Cur, Look, Out DevicePtr
}

// Reduce is one run of the reduction pass (ir.Func.Reduce) before a step.
type Reduce struct {
	Kernel       string // the device kernel
	HostFunction string // the host function in the shared object
	// Reference is the interpreter's program, for a backend without
	// compiled entry points.
	Reference *interp.Program
	Terms     int            // the sums a tensor has (ir.Func.NumReductions)
	Tensors   []ReduceTensor // in order
	Noise     rng.Stream     // the step's noise
	Offset    int64          // the global index of the memory's coordinate 0
	// Keep asks the pass to keep the gradient it privatizes, every
	// tensor's coordinates, in the backend's own scratch, for the next
	// Step on the same memory (Step.Kept), which then does not draw the
	// noise again. The runtime sets it only where r.Noise draws and the
	// pass reads g.
	Keep bool
}

// ReduceTensor is one tensor of a reduction pass: its coordinates [Lo, Hi)
// of the memory and its scalars, the reduce block's then σ_w
// (interp.Program.ReduceScalars).
type ReduceTensor struct {
	Lo, Hi  int
	Scalars []float32
}

// Len is how many partials the pass computes.
func (r Reduce) Len() int {
	n := 0
	for _, t := range r.Tensors {
		n += r.Terms * reduce.ReduceChunks(t.Hi-t.Lo)
	}
	return n
}

// Split cuts partials (len r.Len()) into each tensor's.
func (r Reduce) Split(partials []float32) [][]float32 {
	out := make([][]float32, len(r.Tensors))
	for i, t := range r.Tensors {
		k := r.Terms * reduce.ReduceChunks(t.Hi-t.Lo)
		out[i], partials = partials[:k:k], partials[k:]
	}
	return out
}

// Diagnostic names a diagnostic's entry points.
type Diagnostic struct {
	Kind         string // e.g. "clamp_mass"
	Kernel       string // the device kernel
	HostFunction string // the host function in the shared object
	// Reference is the interpreter's form, for a backend without compiled
	// entry points.
	Reference *interp.Diagnostic
}

// NonFiniteExampleError reports an example whose squared norm is not
// finite: its gradient holds a NaN or ±Inf, or squares past float32's
// range; or, Given, a norm given for it (ClipScales) is not finite.
type NonFiniteExampleError struct {
	Example int
	Given   bool
}

func (e *NonFiniteExampleError) Error() string {
	if e.Given {
		return fmt.Sprintf("runtime: a norm given for example %d is NaN or ±Inf (or its mix overflows): no scales computed", e.Example)
	}
	return fmt.Sprintf("runtime: example %d has a NaN or ±Inf gradient entry (or one whose square overflows float32): privatize skipped, nothing changed", e.Example)
}

// FaultError is a Step that failed after it began changing buffers: a
// device fault, or a launch refused after earlier segments ran. Part of the
// step may be applied, so the runtime refuses every further step until a
// checkpoint is loaded (runtime.Optimizer.Load). A backend checks what it
// can before it changes anything, and returns a plain error for that.
type FaultError struct{ Err error }

func (e *FaultError) Error() string {
	return fmt.Sprintf("%v (the step may be applied in part: load a checkpoint before stepping again)", e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// FirstNaN returns the index of the first NaN in s, or -1: the example
// whose scale privatize's scales phase left NaN for a non-finite norm.
func FirstNaN(s []float32) int {
	for i, x := range s {
		if x != x {
			return i
		}
	}
	return -1
}
