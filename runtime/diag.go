package runtime

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/cudadrv"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// ClampMassKind is the diagnostic ClampMass reports (docs/dsl.md).
const ClampMassKind = "clamp_mass"

// diagState is what the diagnostics need once enabled: the interpreter's
// form (the reference), the manifest's entry points, and the last value.
type diagState struct {
	ref   *interp.Diagnostic
	entry manifest.Diagnostic
	host  *hostkernel.Diagnostic // the host function, on the CPU backend with a shared object
	value float64
	steps int // the step the value is of, plus 1; 0: none yet
}

// EnableDiagnostics turns on the optimizer's clamp_mass diagnostic: after
// each successful Step, the runtime runs the diagnostic's kernel on the
// states the step left and ClampMass returns its value. It is off by
// default, and off it costs nothing: the step kernel is the same either
// way. An optimizer whose .dsl declares no `diagnostic clamp_mass(...)` is
// an error.
func (o *Optimizer) EnableDiagnostics() error {
	defer o.lock()()
	if o.diag != nil {
		return nil
	}
	ref, err := o.prog.Diagnostic(ClampMassKind)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	i := slices.IndexFunc(o.m.Kernels.Diagnostics, func(d manifest.Diagnostic) bool { return d.Kind == ClampMassKind })
	if i < 0 {
		return fmt.Errorf("runtime: the manifest of %s names no %s entry points: rebuild it with fibergen build", o.Name(), ClampMassKind)
	}
	o.diag = &diagState{ref: ref, entry: o.m.Kernels.Diagnostics[i]}
	return nil
}

// ClampMass returns the clamp_mass of the last step (docs/dsl.md): the share
// of Σ|mhat| on the coordinates whose vbar sits on its floor, 0 when
// Σ|mhat| = 0. It is an error before EnableDiagnostics or before a step has
// run with them on.
func (o *Optimizer) ClampMass() (float64, error) {
	defer o.lock()()
	switch {
	case o.diag == nil:
		return 0, errors.New("runtime: diagnostics are off (EnableDiagnostics)")
	case o.diag.steps == 0:
		return 0, errors.New("runtime: no step has run since EnableDiagnostics")
	}
	return o.diag.value, nil
}

// runDiagnostics computes the diagnostics of the step just run with args a:
// the partial sums of each segment (one hyper setting; the whole buffers
// without per-tensor hypers) over its own chunks, then one ratio of them
// all, so every backend sums the same partials in the same order.
func (o *Optimizer) runDiagnostics(a stepArgs) error {
	if o.diag == nil {
		return nil
	}
	var num, den []float32
	for _, s := range a.segs {
		chunks := reduce.ReduceChunks(s.hi - s.lo)
		sn, sd := make([]float32, chunks), make([]float32, chunks)
		var err error
		switch b := o.back.(type) {
		case *cudaBackend:
			err = b.k.segmentPartials(o.diag.entry, b.dev, s, sn, sd)
		case *cpuBackend:
			err = o.cpuDiagPartials(b, s, sn, sd)
		default:
			err = fmt.Errorf("runtime: no diagnostics on the %s backend", o.back.kind())
		}
		if err != nil {
			return err
		}
		num, den = append(num, sn...), append(den, sd...)
	}
	o.diag.value, o.diag.steps = reduce.Ratio(num, den), o.t
	return nil
}

// cpuDiagPartials computes the partials of segment s on every core: with
// the host function where the shared object is loaded, else with the
// interpreter. Each core takes whole chunks, so the split does not change a
// bit.
func (o *Optimizer) cpuDiagPartials(b *cpuBackend, s segment, num, den []float32) error {
	if b.kernel != nil && o.diag.host == nil {
		h, err := hostkernel.OpenDiagnostic(b.so, o.diag.entry.HostFunction, len(o.m.Buffers), len(o.m.Scalars))
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		o.diag.host = h
	}
	bufs := make([][]float32, len(b.bufs))
	for i, buf := range b.bufs {
		bufs[i] = buf[s.lo:s.hi]
	}
	n, per := s.hi-s.lo, max((len(num)+b.threads-1)/b.threads, 1)
	return parallelChunks(len(num), per, func(lo, hi int) error {
		if o.diag.host != nil {
			return o.diag.host.Run(bufs, s.scalars, n, lo, hi, num, den)
		}
		start, end := lo*reduce.ReduceChunk, min(hi*reduce.ReduceChunk, n)
		var states [][]float32
		for _, st := range bufs[2:] {
			states = append(states, st[start:end])
		}
		return o.diag.ref.Partials(s.scalars, states, num[lo:hi], den[lo:hi])
	})
}

// parallelChunks runs f on the chunk ranges [lo, lo+per) of [0, n) at once.
func parallelChunks(n, per int, f func(lo, hi int) error) error {
	var work []func() error
	for lo := 0; lo < n; lo += per {
		work = append(work, func() error { return f(lo, min(lo+per, n)) })
	}
	return runLimited(work, max(len(work), 1))
}

// closeDiagnostics releases the diagnostic's host function, if loaded.
func (o *Optimizer) closeDiagnostics() error {
	if o.diag == nil {
		return nil
	}
	if o.diag.host == nil {
		return nil
	}
	err := o.diag.host.Close()
	o.diag.host = nil
	return err
}

// diagPartials runs the diagnostic's kernel over the device buffers, one
// warp per chunk, and copies the partials back.

// deviceDiagnostics computes the diagnostics of the StepDevice that just
// ran on the trainer's buffers with args a, segment by segment as
// runDiagnostics does; err is the step's own result.
func (o *Optimizer) deviceDiagnostics(k *cudaKernels, bufs []cudadrv.DevicePtr, a stepArgs, err error) error {
	if err != nil || o.diag == nil {
		return err
	}
	var num, den []float32
	for _, s := range a.segs {
		chunks := reduce.ReduceChunks(s.hi - s.lo)
		sn, sd := make([]float32, chunks), make([]float32, chunks)
		if err := k.segmentPartials(o.diag.entry, bufs, s, sn, sd); err != nil {
			return fmt.Errorf("runtime: step %d ran, but its diagnostics failed: %w", o.t-1, err)
		}
		num, den = append(num, sn...), append(den, sd...)
	}
	o.diag.value, o.diag.steps = reduce.Ratio(num, den), o.t
	return nil
}

// segmentPartials runs the diagnostic's kernel e on segment s of the
// device buffers bufs.
func (k *cudaKernels) segmentPartials(e manifest.Diagnostic, bufs []cudadrv.DevicePtr, s segment, num, den []float32) error {
	return k.diagPartials(e, offsetPtrs(bufs, s.lo), s.hi-s.lo, s.scalars, num, den)
}

// diagPartials runs the diagnostic's kernel e over the n coordinates of the
// device buffers bufs (theta, g, states), one warp per chunk, and copies
// the partials back.
func (k *cudaKernels) diagPartials(e manifest.Diagnostic, bufs []cudadrv.DevicePtr, n int, scalars, num, den []float32) error {
	if len(num) == 0 {
		return nil
	}
	fn, err := k.mod.Function(e.Kernel)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	out, err := k.ctx.Alloc(8 * len(num))
	if err != nil {
		return fmt.Errorf("runtime: %s: %w", e.Kernel, err)
	}
	defer k.ctx.Free(out)
	var args []any
	for _, p := range bufs {
		args = append(args, p)
	}
	for _, s := range scalars {
		args = append(args, s)
	}
	args = append(args, int64(n), out, out.Add(4*len(num)))
	if err := k.launch(fn, 32*len(num), args...); err != nil {
		return err
	}
	if err := k.ctx.CopyDtoH(num, out); err != nil {
		return fmt.Errorf("runtime: %s: %w", e.Kernel, err)
	}
	if err := k.ctx.CopyDtoH(den, out.Add(4*len(num))); err != nil {
		return fmt.Errorf("runtime: %s: %w", e.Kernel, err)
	}
	return nil
}
