package runtime

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/backend"
)

// The clamp warning (issue 36, docs/runtime.md "The clamp warning"). On a
// fixed floor (fiber's eps_v = 1e-8) a coordinate whose corrected second
// moment sits on the floor steps ~1/sqrt(eps_v) per unit of mhat, 10^4 times
// more than where the signal is strong: the optimizer has two step sizes,
// and docs/reproduction.md measured it costing FiBeR 2–4 points against
// DP-Adam at clamp_mass 0.3–0.46, where the paper reports below 0.01. So
// the runtime samples clamp_mass every clampWatchEvery steps and warns once
// when the last clampWatchSamples samples (a stretch of 50 steps) all lie
// between ClampWarnThreshold and clampAllOnFloor: a mixture. Above 0.9
// nearly the whole update is on the floor, one step size again (the study's
// eps_v = 1e-4 runs, at 0.997, train as well as DP-Adam): a floor the user
// raised on purpose, not a warning. 0.2 sits between the healthy runs (0 without
// correction; below 0.01 in the paper) and every corrected run of the study
// (0.26 and up from the first evaluation on), and 50 steps is long enough
// that one noisy step cannot trigger it and short enough to warn within the
// first epoch of a small run. A sample reads the states once more (1/10 of
// the diagnostic's cost per step on average, under 2% of fiber's step);
// Options.NoClampWarning turns it off, and it changes no step.
const (
	ClampWarnThreshold = 0.2 // the clamp_mass the warning tests against
	clampWatchEvery    = 10  // steps between two samples
	clampWatchSamples  = 5   // the samples that must all exceed the threshold
	clampAllOnFloor    = 0.9 // above it, one step size: no warning
)

// clampWatch is the clamp warning's state: the floor's expression, the last
// samples, and whether it has warned.
type clampWatch struct {
	floor   string
	entry   *backend.Diagnostic // found on the first sample
	samples []float64
	warned  bool
}

// newClampWatch returns the watch of fn, or nil when fn has no clamp_mass
// on a fixed floor (ir.Diagnostic.FixedFloor).
func newClampWatch(fn *ir.Func) *clampWatch {
	d := fn.Diagnostic(ClampMassKind)
	if d == nil || !d.FixedFloor() {
		return nil
	}
	return &clampWatch{floor: ir.ExprString(d.Floor())}
}

// due reports whether the step just counted, t steps done, is sampled.
func (w *clampWatch) due(t int) bool {
	return w != nil && !w.warned && t > 0 && t%clampWatchEvery == 0
}

// watchStep takes the clamp warning's sample of the step just run.
func (o *Optimizer) watchStep(mem backend.Memory, a backend.Step) {
	if o.diag != nil {
		o.sampleClampMass(o.diag.value)
		return
	}
	v, err := o.watchClampMass(mem, a)
	if err != nil {
		o.watch = nil
		o.warn(fmt.Sprintf("%s: the clamp warning is off: %v", o.Name(), err))
		return
	}
	o.sampleClampMass(v)
}

// watchClampMass computes clamp_mass for the clamp warning, its entry
// points found on the first sample.
func (o *Optimizer) watchClampMass(mem backend.Memory, a backend.Step) (float64, error) {
	if o.watch.entry == nil {
		e, err := o.clampMassEntry()
		if err != nil {
			return 0, err
		}
		o.watch.entry = &e
	}
	return o.clampMassOf(mem, *o.watch.entry, a)
}

// sampleClampMass adds the sample v of the step just run and warns once the
// last clampWatchSamples all lie in (ClampWarnThreshold, clampAllOnFloor].
func (o *Optimizer) sampleClampMass(v float64) {
	w := o.watch
	w.samples = append(w.samples, v)
	if len(w.samples) > clampWatchSamples {
		w.samples = w.samples[1:]
	}
	if len(w.samples) < clampWatchSamples || slices.Min(w.samples) <= ClampWarnThreshold || slices.Max(w.samples) > clampAllOnFloor {
		return
	}
	w.warned = true
	o.warn(o.clampWarning())
}

// clampWarning is the warning's text: what was measured, what it means and
// what to change.
func (o *Optimizer) clampWarning() string {
	w := o.watch
	mean := 0.0
	for _, v := range w.samples {
		mean += v / float64(len(w.samples))
	}
	return fmt.Sprintf("%s: clamp_mass stayed above %g for %d steps (mean %.2f up to step %d): that share of the update "+
		"sits on the fixed floor %s of the corrected second moment, where each step is far larger than elsewhere; "+
		"raise %s (e.g. 1e-4), or floor it with the noise as fiber_nfloor and fiber_rfloor do "+
		"(docs/reproduction.md, \"Floor rules\"); Options.NoClampWarning turns this warning off",
		o.Name(), ClampWarnThreshold, clampWatchEvery*clampWatchSamples, mean, o.t-1, w.floor, w.floor)
}

// Warnings returns the warnings the optimizer has given since the last
// call (the clamp warning), and forgets them.
func (o *Optimizer) Warnings() []string {
	defer o.lock()()
	out := o.warnings
	o.warnings = nil
	return out
}

// ClampWarning reports whether the clamp warning watches this optimizer:
// it has clamp_mass on a fixed floor and Options.NoClampWarning is off.
func (o *Optimizer) ClampWarning() bool {
	defer o.lock()()
	return o.watch != nil
}
