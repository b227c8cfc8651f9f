// Package interp runs an optimized ir.Func directly: the runtime's go
// backend (the reference, `fibergen run --backend go`) for any .dsl file,
// and the second engine of the differential tests against the generated Go
// code. It computes exactly what
// the generated code computes, bit for bit: uniform values in float64 (or
// float32 where the IR says so) with ir.Eval64/ir.Eval32, the kernel in
// float32.
package interp

import (
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
)

// Program is an ir.Func prepared for interpretation.
type Program struct {
	Func    *ir.Func
	step    *code
	init    *code
	obsArg  *code
	scalars []*ir.Value // ir.HostScalars(Func.Step): the kernels' scalar arguments
	varying []varyingCheck
	reduce  *code // the reduce block; nil without reductions
	// reduceScalars are ir.HostScalars(Func.Reduce): the reduction pass's
	// scalar arguments, before sqrt(sigma_w2).
	reduceScalars []*ir.Value
	combines      []lang.Op // ir.Func.ReduceCombines
}

// New prepares fn, which must be optimized (ir.Optimize) so that each block
// is a host part followed by a kernel part.
func New(fn *ir.Func) (*Program, error) {
	if err := ir.Verify(fn); err != nil {
		return nil, err
	}
	p := &Program{Func: fn, scalars: ir.HostScalars(fn.Step)}
	var err error
	if p.init, err = compile(fn, fn.Init); err == nil {
		if p.obsArg, err = compile(fn, fn.ObsArgs); err == nil {
			p.step, err = compile(fn, fn.Step)
		}
	}
	if err == nil {
		p.step.gains = newGains(fn)
		p.step.scalars, err = newScalarTrack(fn, p.step.gains)
	}
	if err == nil {
		p.varying, err = compileVarying(fn)
	}
	if err == nil && fn.Reduce != nil {
		p.reduce, err = compileReduce(p)
	}
	return p, err
}

// NumStates is the number of state buffers Step takes.
func (p *Program) NumStates() int { return len(p.Func.States) }

// Init fills each state buffer (in Func.States order) with its initial
// value for hypers h (one value per hyper, as Func.DefaultHypers).
func (p *Program) Init(h []float64, states [][]float32) error {
	if len(states) != p.NumStates() || len(h) != len(p.Func.Hypers) {
		return fmt.Errorf("%s: Init needs %d hypers and %d states, got %d and %d",
			p.Func.Name, len(p.Func.Hypers), p.NumStates(), len(h), len(states))
	}
	r := p.init.host(h, 0, 0, nil)
	for _, s := range p.init.kernelPart {
		v := r.f32[s.a]
		if s.store.Narrow() {
			v = rng.Round(s.store.DType, v, false, 0) // no step to draw rounding bits for
		}
		buf := states[s.slot-ir.FirstState]
		for i := range buf {
			buf[i] = v
		}
	}
	return nil
}

// Observe returns the observation's arguments at step t, in the order of
// Func.Observe.Args.
func (p *Program) Observe(h []float64, t int) []float64 {
	r := p.obsArg.host(h, t, 0, nil)
	out := make([]float64, 0, len(p.obsArg.kernelPart))
	for _, s := range p.obsArg.kernelPart {
		out = append(out, r.f64[s.a])
	}
	return out
}

// Attenuation returns what attenuation(state) and attenuation_t(state)
// compute at hypers h: the steady-state DP-noise attenuation of the state's
// filter and the finite-time one after the noise of steps 0..t (0 for t < 0,
// before any noise, and where the filter has none: ir.Filter.HasFiniteGain).
// ok is false where no attenuation names the state (Func.Filters).
func (p *Program) Attenuation(state string, h []float64, t int) (steady, finite float64, ok bool) {
	fl := p.Func.Filter(state)
	if fl == nil {
		return 0, 0, false
	}
	if t >= 0 && fl.HasFiniteGain() {
		finite = p.step.gains.finiteGain(fl, h, t)
	}
	return p.step.gains.steadyGain(fl, h), finite, true
}

// Scalars holds a step's host values, computed once per step.
type Scalars struct {
	regs
	index map[*ir.Value]int
}

// Check reports hypers h that are out of range, make a filter unstable, or
// make an initial value or a host scalar not finite (CheckValues).
func (p *Program) Check(h []float64) error {
	if err := p.Func.CheckHypers(h); err != nil {
		return err
	}
	return p.CheckValues(h)
}

// NonFiniteValueError reports an initial value or a host scalar that is
// NaN or ±Inf at some hypers: a state that starts at NaN, or a scalar that
// overflows (a product of large hypers), would spoil every coordinate.
type NonFiniteValueError struct {
	State  string // the state whose initial value it is, or ""
	Scalar string // else the host scalar's name (S0, …) and expression
	Value  float64
	At     string // the hypers, name=value, …
}

func (e *NonFiniteValueError) Error() string {
	if e.State != "" {
		return fmt.Sprintf("the initial value of state %s is %v at %s: it must be finite", e.State, e.Value, e.At)
	}
	return fmt.Sprintf("the host value %s is %v at step 0 with %s: it must be finite", e.Scalar, e.Value, e.At)
}

// CheckValues returns a *NonFiniteValueError if an initial value (in
// float32, as the states hold it) or a host scalar of step 0 (without
// noise) is NaN or ±Inf at hypers h.
func (p *Program) CheckValues(h []float64) error {
	states := make([][]float32, p.NumStates())
	for i := range states {
		states[i] = make([]float32, 1)
	}
	if err := p.Init(h, states); err != nil {
		return err
	}
	at := p.Func.Setting(h)
	lines := make([][]float32, len(p.Func.LineStates))
	for i := range lines {
		lines[i] = make([]float32, 1)
	}
	if err := p.InitLines(h, lines); err != nil {
		return err
	}
	for i, s := range slices.Concat(states, lines) {
		if x := float64(s[0]); math.IsNaN(x) || math.IsInf(x, 0) {
			return &NonFiniteValueError{State: slices.Concat(p.Func.States, p.Func.LineStateNames())[i], Value: x, At: at}
		}
	}
	sc := p.HostScalars(h, 0, 0)
	for i, v := range p.scalars {
		if ir.ReadsReduction(v) { // the tensor's, known at the step only
			continue
		}
		if x := float64(sc.Value(v)); math.IsNaN(x) || math.IsInf(x, 0) {
			return &NonFiniteValueError{Scalar: fmt.Sprintf("S%d = %s", i, ir.ExprString(v)), Value: x, At: at}
		}
	}
	return nil
}

// HostScalars computes the step's host values for hypers h (one value per
// hyper, as Func.DefaultHypers) at step t. Values that depend on the hypers
// alone are computed once per setting; attenuation_t costs O(k²) per step
// when steps come in order.
func (p *Program) HostScalars(h []float64, t int, sigmaW2 float64) Scalars {
	return Scalars{p.step.host(h, t, sigmaW2, nil), p.step.index}
}

// Step runs the kernel over every coordinate: theta, g and each state
// (in Func.States order) must have the same length. g is privatized
// already, or, for a noise block, the clipped mean, which the step
// privatizes with the noise nz (nil: none, z = 0). It writes no line
// state: s.CommitLines does, once every piece of the tensor has stepped.
func (p *Program) Step(s Scalars, nz *Noise, theta, g []float32, states [][]float32) error {
	bufs := append([][]float32{ir.ThetaBuffer: theta, ir.GradBuffer: g}, states...)
	if len(states) != p.NumStates() {
		return fmt.Errorf("%s: Step needs %d states, got %d", p.Func.Name, p.NumStates(), len(states))
	}
	for i, b := range bufs {
		if len(b) != len(theta) {
			return fmt.Errorf("%s: buffer %s has length %d, theta %d", p.Func.Name, ir.Buffers(p.Func)[i].Name, len(b), len(theta))
		}
	}
	if nz == nil {
		nz = noNoise
	}
	if ln := s.regs.lines; ln != nil {
		if err := ln.shape.holds(p.Func.Name, ln.off, len(theta)); err != nil {
			return err
		}
	}
	p.step.run(s.regs, bufs, nz)
	return nil
}

// noNoise draws nothing: z = 0, and g as given.
var noNoise = &Noise{Stream: rng.Stream{Mode: rng.Off}}

// Noise is the noise the step of a noise block draws (docs/dsl.md,
// "Correlated noise"): the scheme and counter, σ_w, and the global index
// of the buffers' first coordinate. Without a noise block the step takes
// g privatized already, and Noise is unused.
type Noise struct {
	Stream rng.Stream
	SigmaW float32
	Offset uint64
}

// Engine binds a Program to hyper values: the reference of a whole run,
// which the differential tests hold the generated code and the kernels to.
// With Noise, Step draws the DP noise of package rng into g, as the
// generated kernels do (g is then the clipped mean gradient). Trainers use
// package runtime, which runs the kernels.
type Engine struct {
	P      *Program
	Hypers []float64
	Noise  bool
	Seed   uint64
	// For an optimizer with line values (lines.go): Shape is the
	// buffers' shape as one tensor (the zero Shape: one row of all the
	// coordinates), and Lines its line states (Func.LineStates order),
	// which Init fills and Step updates.
	Shape Shape
	Lines [][]float32
}

// shape is the engine's tensor shape for n coordinates.
func (e Engine) shape(n int) Shape {
	if e.Shape == (Shape{}) {
		return Shape{1, n}
	}
	return e.Shape
}

// NumStates is the number of state buffers.
func (e Engine) NumStates() int { return e.P.NumStates() }

// Init checks the hypers (ranges and the stability of the filters) and
// sets the states to their initial values.
func (e Engine) Init(states [][]float32) error {
	if err := e.P.Check(e.Hypers); err != nil {
		return err
	}
	if err := e.P.InitLines(e.Hypers, e.Lines); err != nil {
		return err
	}
	return e.P.Init(e.Hypers, states)
}

// Step runs step t; it does not change g.
func (e Engine) Step(t int, sigmaW2 float64, theta, g []float32, states [][]float32) error {
	// The stream's seed and step also draw the stochastic rounding bits.
	nz := &Noise{Stream: rng.Stream{Mode: rng.Off, Seed: e.Seed, Step: uint32(t)}, SigmaW: rng.SigmaW(sigmaW2)}
	if e.Noise || e.P.Func.Stochastic() {
		if err := rng.CheckStep(t); err != nil {
			return err
		}
	}
	if e.Noise {
		nz.Stream.Mode = rng.Philox
	}
	if e.Noise && e.P.Func.Noise == nil {
		noisy := make([]float32, len(g))
		nz.Stream.Privatize(noisy, g, nz.SigmaW, 0)
		g, nz.Stream.Mode = noisy, rng.Off
	}
	red, err := e.reduced(t, sigmaW2, theta, g, states)
	if err != nil {
		return err
	}
	s := e.P.HostScalarsReduced(e.Hypers, t, sigmaW2, red)
	if err := e.P.Step(s, nz, theta, g, states); err != nil {
		return err
	}
	s.CommitLines()
	return nil
}

// reduced is what the host part of step t reads of the buffers, one
// tensor: its reductions (g privatized already), and its shape and line
// states; nil for an optimizer without either.
func (e Engine) reduced(t int, sigmaW2 float64, theta, g []float32, states [][]float32) (red *Reduced, err error) {
	shape := e.shape(len(theta))
	if e.P.reduce != nil {
		bufs := append([][]float32{ir.ThetaBuffer: theta, ir.GradBuffer: g}, states...)
		if red, err = e.P.ReduceShaped(e.P.ReduceScalars(e.Hypers, t, sigmaW2), nil, bufs, shape); err != nil {
			return nil, err
		}
	}
	if !e.P.Func.HasLines() {
		return red, nil
	}
	if red == nil {
		red = &Reduced{Numel: len(theta)}
	}
	red.Shape, red.LineStates = shape, e.Lines
	return red, checkLines(e.P.Func, red, len(theta))
}

// Run applies len(grads)/len(theta) steps to theta from freshly initialized
// states: grads holds the gradients of every step, step after step, each
// len(theta) long. It returns the final states, then the final line states
// (Func.LineStates order) of the buffers as one tensor of e's Shape.
func (e Engine) Run(theta, grads []float32, sigmaW2 float64) ([][]float32, error) {
	n := len(theta)
	if n == 0 && len(grads) != 0 || n != 0 && len(grads)%n != 0 {
		return nil, fmt.Errorf("gradients hold %d values, not a whole number of steps of %d", len(grads), n)
	}
	states := make([][]float32, e.NumStates())
	for i := range states {
		states[i] = make([]float32, n)
	}
	e.Lines = make([][]float32, len(e.P.Func.LineStates))
	for i, s := range e.P.Func.LineStates {
		e.Lines[i] = make([]float32, e.shape(n).Len(s.Axis))
	}
	if err := e.Init(states); err != nil {
		return nil, err
	}
	for t := 0; n > 0 && (t+1)*n <= len(grads); t++ {
		if err := e.Step(t, sigmaW2, theta, grads[t*n:(t+1)*n], states); err != nil {
			return nil, fmt.Errorf("step %d: %w", t, err)
		}
	}
	return append(states, e.Lines...), nil
}

// NumKernelScalars is the length of KernelScalars' result.
func (p *Program) NumKernelScalars() int { return len(p.scalars) + 1 }

// KernelScalars returns the scalar arguments of the generated kernels for
// the step s was computed for: the host scalars (ir.HostScalars order), then
// sqrt(sigmaW2) (rng.SigmaW), as docs/kernels.md lays them out.
func (p *Program) KernelScalars(s Scalars, sigmaW2 float64) []float32 {
	out := make([]float32, 0, len(p.scalars)+1)
	for _, v := range p.scalars {
		out = append(out, s.Value(v))
	}
	return append(out, rng.SigmaW(sigmaW2))
}

// Value returns the float32 host value of v, a value of the step block.
func (s Scalars) Value(v *ir.Value) float32 { return s.f32[s.index[v]] }
