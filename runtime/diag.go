package runtime

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// ClampMassKind is the diagnostic ClampMass reports (docs/dsl.md).
const ClampMassKind = "clamp_mass"

// diagState is what the diagnostics need once enabled: the entry points
// (the manifest's, and the interpreter's form, the reference), and the
// last value.
type diagState struct {
	entry backend.Diagnostic
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
	entry, err := o.clampMassEntry()
	if err != nil {
		return err
	}
	o.diag = &diagState{entry: entry}
	return nil
}

// clampMassEntry returns the entry points of the clamp_mass diagnostic:
// the manifest's kernels and the interpreter's form.
func (o *Optimizer) clampMassEntry() (backend.Diagnostic, error) {
	ref, err := o.prog.Diagnostic(ClampMassKind)
	if err != nil {
		return backend.Diagnostic{}, fmt.Errorf("runtime: %w", err)
	}
	i := slices.IndexFunc(o.m.Kernels.Diagnostics, func(d manifest.Diagnostic) bool { return d.Kind == ClampMassKind })
	if i < 0 {
		return backend.Diagnostic{}, fmt.Errorf("runtime: the manifest of %s names no %s entry points: rebuild it with fibergen build", o.Name(), ClampMassKind)
	}
	e := o.m.Kernels.Diagnostics[i]
	return backend.Diagnostic{Kind: e.Kind, Kernel: e.Kernel, HostFunction: e.HostFunction, Reference: ref}, nil
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

// runDiagnostics computes the diagnostics of the step just run with args a
// when they are on, and the clamp warning's sample when this step is one.
// Only the diagnostics' failure is the step's: a sample that fails turns
// the warning off, with a warning that says why.
func (o *Optimizer) runDiagnostics(mem backend.Memory, a backend.Step) error {
	if o.diag != nil {
		v, err := o.clampMassOf(mem, o.diag.entry, a)
		if err != nil {
			return err
		}
		o.diag.value, o.diag.steps = v, o.t
	}
	if o.watch.due(o.t) {
		o.watchStep(mem, a)
	}
	return nil
}

// clampMassOf computes clamp_mass on the states the step a left in mem: the
// partial sums of each segment (one hyper setting; the whole buffers
// without per-tensor hypers) over its own chunks, then one ratio of them
// all, so every backend sums the same partials in the same order.
func (o *Optimizer) clampMassOf(mem backend.Memory, entry backend.Diagnostic, a backend.Step) (float64, error) {
	var num, den []float32
	for _, s := range a.Segments {
		chunks := reduce.ReduceChunks(s.Hi - s.Lo)
		sn, sd := make([]float32, chunks), make([]float32, chunks)
		if err := o.back.Partials(mem, entry, s, sn, sd); err != nil {
			return 0, err
		}
		num, den = append(num, sn...), append(den, sd...)
	}
	return reduce.Ratio(num, den), nil
}

// deviceDiagnostics computes the diagnostics of the StepDevice that just
// ran on the trainer's buffers mem with args a; err is the step's own
// result.
func (o *Optimizer) deviceDiagnostics(mem backend.Memory, a backend.Step, err error) error {
	if err != nil {
		return err
	}
	if err := o.runDiagnostics(mem, a); err != nil {
		return fmt.Errorf("runtime: step %d ran, but its diagnostics failed: %w", o.t-1, err)
	}
	return nil
}

// Partials computes the partials of segment s on every core: with the host
// function where the shared object is loaded, else with the interpreter.
// Each core takes whole chunks, so the split does not change a bit.
func (b *cpuBackend) Partials(m backend.Memory, d backend.Diagnostic, s backend.Segment, num, den []float32) error {
	if err := b.host(m); err != nil {
		return err
	}
	host, err := b.diagnostic(d)
	if err != nil {
		return err
	}
	bufs := make([]backend.Host, len(b.bufs))
	for i, buf := range b.bufs {
		bufs[i] = buf.Slice(s.Lo, s.Hi)
	}
	n, per := s.Hi-s.Lo, max((len(num)+b.threads-1)/b.threads, 1)
	return parallelChunks(len(num), per, func(lo, hi int) error {
		if host != nil {
			return host.RunHost(bufs, s.Scalars, n, lo, hi, num, den)
		}
		start, end := lo*reduce.ReduceChunk, min(hi*reduce.ReduceChunk, n)
		states := widenRange(bufs[ir.FirstState:], start, end)
		return d.Reference.Partials(s.Scalars, states, num[lo:hi], den[lo:hi])
	})
}

// diagnostic returns d's host function, loaded from the shared object at
// its first use; nil without one (the reference runs).
func (b *cpuBackend) diagnostic(d backend.Diagnostic) (*hostkernel.Diagnostic, error) {
	if b.kernel == nil {
		return nil, nil
	}
	if h, ok := b.diags[d.HostFunction]; ok {
		return h, nil
	}
	h, err := hostkernel.OpenDiagnostic(b.so, d.HostFunction, b.kernel.NumBuffers, b.kernel.NumScalars)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	if b.diags == nil {
		b.diags = map[string]*hostkernel.Diagnostic{}
	}
	b.diags[d.HostFunction] = h
	return h, nil
}

// parallelChunks runs f on the chunk ranges [lo, lo+per) of [0, n) at once.
func parallelChunks(n, per int, f func(lo, hi int) error) error {
	work := chunkWork(n, per, f)
	return runLimited(work, max(len(work), 1))
}

// chunkWork is f over [0, n) in pieces of per: f(0, per), f(per, 2·per), ….
func chunkWork(n, per int, f func(lo, hi int) error) []func() error {
	var work []func() error
	for lo := 0; lo < n; lo += per {
		work = append(work, func() error { return f(lo, min(lo+per, n)) })
	}
	return work
}
