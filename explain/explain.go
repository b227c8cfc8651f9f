// Package explain describes what fibergen derived for an optimizer, at a
// hyper setting: the hypers, the states' initial values, the observation,
// every host scalar, the noise attenuation of each state the noise reaches
// linearly (the model, the Lyapunov solution, the closed form, the spectral
// radius and the stability region) and what the kernel reads and writes —
// as data, whose JSON form is `fibergen explain --json`, and as text.
package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
)

// Explanation is what explain reports; its JSON form is the output of
// fibergen explain --json.
type Explanation struct {
	Optimizer   string        `json:"optimizer"`
	Source      string        `json:"source"`
	Hypers      []Hyper       `json:"hypers"`
	States      []State       `json:"states"`
	Observe     *Observe      `json:"observe,omitempty"`
	Scalars     []ScalarState `json:"scalars,omitempty"`
	HostScalars []Scalar      `json:"host_scalars"`
	Kernel      Kernel        `json:"kernel"`
	// Reduce is the reduction pass that runs before the step of an
	// optimizer with per-tensor reductions; nil without one.
	Reduce *Reduce `json:"reduce,omitempty"`
	// LineStates are the states per row or per column, and HostLines the
	// values per row or column the kernel reads (docs/dsl.md, "Rows and
	// columns"); absent without them.
	LineStates  []LineState             `json:"line_states,omitempty"`
	HostLines   []HostLine              `json:"host_lines,omitempty"`
	Attenuation map[string]*Attenuation `json:"attenuation"`
	// NoiseFilter is the noise block's filter and the figures of its
	// factorization; nil without a noise block.
	NoiseFilter *NoiseFilter `json:"noise_filter,omitempty"`
	// Noise are the noise schemes a run can draw its noise in, the default
	// first (docs/noise.md).
	Noise   []NoiseScheme `json:"noise"`
	Step    string        `json:"step"`
	IR      string        `json:"ir,omitempty"`
	HostISA *HostISA      `json:"host_isa,omitempty"` // explain --host-isa

	notLinear map[string]string // the human form says why a state has no attenuation
}

// Hyper is a hyper at the setting explained, with its default and range.
type Hyper struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Default float64 `json:"default"`
	Range   string  `json:"range,omitempty"`
	// DefaultExpr is a derived hyper's default as written (lr / 100): it
	// follows the hypers it reads until the hyper is set itself.
	DefaultExpr string `json:"default_expr,omitempty"`
	// Alias is the name a binding accepts for the hyper besides its own
	// (docs/dsl.md), as the manifest records it; nil without one.
	Alias *ir.Alias `json:"alias,omitempty"`
}

// State is a state with its initial value at the setting, and what the
// step reads for it at step 0 where that is not its buffer (`state m = g`).
type State struct {
	Name  string  `json:"name"`
	Init  float32 `json:"init"`
	Start string  `json:"start,omitempty"`
	// NoiseBuffer marks a buffer of the noise block (docs/dsl.md,
	// "Correlated noise"): past noise, never written out.
	NoiseBuffer bool `json:"noise_buffer,omitempty"`
	// Storage is how a state narrower than float32 is stored ("bf16",
	// "f16 stochastic"; docs/dsl.md, "Storage types"); absent for float32.
	Storage string `json:"storage,omitempty"`
}

// Observe is the observation and its arguments at step 0.
type Observe struct {
	Kind string  `json:"kind"`
	Args []Value `json:"args"`
}

// Value is a named value, its DSL expression and its value.
type Value struct {
	Name  string  `json:"name"`
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
}

// Scalar is a host scalar; Value is given when it depends on hypers only,
// Steps when it changes from step to step (a schedule, a bias correction).
type Scalar struct {
	Name    string `json:"name"`
	Expr    string `json:"expr"`
	PerStep bool   `json:"per_step"`
	// PerTensor marks a value that reads the tensor's reductions: the
	// host computes it for each tensor between the reduction pass and the
	// step (Steps are then absent).
	PerTensor bool     `json:"per_tensor,omitempty"`
	Value     *float32 `json:"value,omitempty"`
	// Steps are its values at a few steps, with sigma_w2 = 1 (the runtime
	// sets the noise variance; at 1 a term A·sigma_w2 shows A).
	Steps []AtStep[float32] `json:"steps,omitempty"`
}

// AtStep is a value at step T: a host scalar's (float32) or a scalar's
// (float64).
type AtStep[V float32 | float64] struct {
	T     int `json:"t"`
	Value V   `json:"value"`
}

// ScalarState is a scalar (a uniform value the host carries from step to
// step): its initial value, its update in the host block, and its values
// at a few steps (after the host block of that step).
type ScalarState struct {
	Name   string            `json:"name"`
	Init   string            `json:"init"`
	Update string            `json:"update"`
	Steps  []AtStep[float64] `json:"steps"`
}

// NoiseScheme is a noise mode a run can draw in and its scheme's version
// (rng.Version, rng.SecureVersion).
type NoiseScheme struct {
	Mode    string `json:"mode"`
	Version string `json:"version"`
	Default bool   `json:"default"`
	// How is how a run selects it: the CLI's flag, the binding's argument.
	How string `json:"how"`
}

// noiseSchemes are the schemes of every run.
var noiseSchemes = []NoiseScheme{
	{rng.Philox.String(), rng.Philox.Scheme(), true, "the default; --seed fixes its seed"},
	{rng.Secure.String(), rng.Secure.Scheme(), false, "run --noise-mode secure, secure=True in PyTorch: a key from the OS, no seed"},
}

// sampleSteps are the steps at which explain evaluates per-step scalars.
var sampleSteps = []int{0, 1, 10, 100, 1000, 10000}

// Kernel is what the step kernel reads and writes, and its operation count.
type Kernel struct {
	Reads      []string `json:"reads"`
	Writes     []string `json:"writes"`
	Operations int      `json:"operations"`
}

// Describe explains u at its default hypers overridden by "name=value"
// settings, which must keep every filter stable, and a noise block's
// factorization under participation part.
func Describe(u *pipeline.Unit, settings []string, part Participation) (*Explanation, error) {
	h, err := u.Func.ApplySettings(settings)
	if err != nil {
		return nil, err
	}
	p, err := interp.New(u.Func)
	if err != nil {
		return nil, err
	}
	if err := p.CheckValues(h); err != nil {
		return nil, err
	}
	x := &Explanation{Optimizer: u.Func.Name, Source: u.Path, Step: stepText(u), Noise: noiseSchemes}
	for i, hy := range u.Func.Hypers {
		r := ""
		if hy.Range != nil {
			r = hy.Range.String()
		}
		x.Hypers = append(x.Hypers, Hyper{hy.Name, h[i], hy.Default, r, derivedExpr(u.Func, hy.Name), hy.Alias})
	}
	x.States = describeStates(p, h)
	x.Observe = describeObserve(u.Func, p, h)
	x.Scalars = describeScalarStates(u.Func, p, h)
	x.HostScalars = describeScalars(u.Func, p, h)
	x.Kernel = describeKernel(u.Func.Step)
	x.Reduce = describeReduce(u.Func)
	x.LineStates, x.HostLines = describeLines(p, h)
	x.Attenuation, x.notLinear = describeAttenuation(u.Func, u.Noise, h)
	if x.NoiseFilter, err = describeNoise(u.Func, h, part); err != nil {
		return nil, err
	}
	return x, nil
}

// derivedExpr is the default of a derived hyper as an expression, or "".
func derivedExpr(fn *ir.Func, name string) string {
	if fn.HyperDefaults == nil {
		return ""
	}
	if v := storeOf(fn.HyperDefaults, name); v != nil {
		return ir.ExprString(v)
	}
	return ""
}

func describeStates(p *interp.Program, h []float64) []State {
	bufs := make([][]float32, p.NumStates())
	for i := range bufs {
		bufs[i] = make([]float32, 1)
	}
	p.Init(h, bufs) // h comes from ApplySettings, bufs from NumStates: cannot fail
	out := []State{}
	for i, name := range p.Func.States {
		st := State{Name: name, Init: bufs[i][0]}
		if start := ir.StartOf(p.Func, name); start != nil {
			st.Start = ir.ExprString(start)
		}
		st.NoiseBuffer = slices.Contains(p.Func.NoiseBuffers(), name)
		if s := p.Func.StorageOf(name); s.Narrow() {
			st.Storage = s.String()
		}
		out = append(out, st)
	}
	return out
}

func describeObserve(fn *ir.Func, p *interp.Program, h []float64) *Observe {
	if fn.Observe == nil {
		return nil
	}
	o := &Observe{Kind: fn.Observe.Kind}
	vals := p.Observe(h, 0)
	for i, s := range fn.ObsArgs.Stores() {
		o.Args = append(o.Args, Value{s.Name, ir.ExprString(s.Args[0]), vals[i]})
	}
	return o
}

func describeScalars(fn *ir.Func, p *interp.Program, h []float64) []Scalar {
	var at []interp.Scalars
	for _, t := range sampleSteps {
		at = append(at, p.HostScalars(h, t, 1))
	}
	out := []Scalar{}
	for i, v := range ir.HostScalars(fn.Step) {
		s := Scalar{Name: fmt.Sprintf("S%d", i), Expr: ir.ExprString(v), PerStep: ir.DependsOnStep(v), PerTensor: ir.ReadsReduction(v)}
		if s.PerTensor {
			out = append(out, s)
			continue
		}
		if !s.PerStep {
			val := at[0].Value(v)
			s.Value = &val
		}
		for j, t := range sampleSteps {
			if s.PerStep {
				s.Steps = append(s.Steps, AtStep[float32]{t, at[j].Value(v)})
			}
		}
		out = append(out, s)
	}
	return out
}

func describeScalarStates(fn *ir.Func, p *interp.Program, h []float64) []ScalarState {
	if len(fn.Scalars) == 0 {
		return nil
	}
	out := make([]ScalarState, len(fn.Scalars))
	for i, name := range fn.Scalars {
		out[i].Name = name
		out[i].Init = ir.ExprString(storeOf(fn.ScalarInit, name))
		out[i].Update = ir.ExprString(storeOf(fn.ScalarStep, name))
	}
	for _, t := range sampleSteps {
		for i, v := range p.Scalars(h, t, 1) {
			out[i].Steps = append(out[i].Steps, AtStep[float64]{t, v})
		}
	}
	return out
}

// storeOf is the value b stores into name.
func storeOf(b *ir.Block, name string) *ir.Value {
	for _, s := range b.Stores() {
		if s.Name == name {
			return s.Args[0]
		}
	}
	return nil
}

func describeKernel(b *ir.Block) Kernel {
	k := Kernel{Reads: []string{}, Writes: []string{}}
	for _, v := range b.Values {
		switch {
		case v.OnHost(): // a line state's load and store among them
		case v.Op == ir.OpLoad:
			k.Reads = append(k.Reads, v.Name)
		case v.Op == ir.OpStore:
			k.Writes = append(k.Writes, v.Name)
		default:
			k.Operations++
		}
	}
	return k
}

func stepText(u *pipeline.Unit) string {
	text := string(u.Canonical)
	if i := strings.Index(text, "step {"); i >= 0 {
		return text[i:]
	}
	return text
}

// WriteText writes the explanation for people.
func (x *Explanation) WriteText(w io.Writer) {
	fmt.Fprintf(w, "optimizer %s (%s)\n\nhypers:\n", x.Optimizer, x.Source)
	for _, h := range x.Hypers {
		def := fmt.Sprintf("%g", h.Default)
		if h.DefaultExpr != "" {
			def += " = " + h.DefaultExpr
		}
		if h.Range != "" {
			def += " " + h.Range
		}
		if h.Alias != nil {
			def += " alias " + h.Alias.String()
		}
		fmt.Fprintf(w, "  %-10s = %-12g default %s\n", h.Name, h.Value, def)
	}
	head := "float32"
	if slices.ContainsFunc(x.States, func(s State) bool { return s.Storage != "" }) {
		head = "float32 unless stored narrower"
	}
	fmt.Fprintf(w, "\nstates (per coordinate, %s):\n", head)
	if len(x.States) == 0 {
		fmt.Fprintf(w, "  (none)\n")
	}
	for _, s := range x.States {
		if s.Storage != "" {
			fmt.Fprintf(w, "  %-10s stored as %s (computed in float32, rounded at each store), initial %g\n", s.Name, s.Storage, s.Init)
			continue
		}
		if s.Start != "" {
			fmt.Fprintf(w, "  %-10s initial %s, read at step 0 (the buffer holds %g until the step writes it)\n", s.Name, s.Start, s.Init)
			continue
		}
		if s.NoiseBuffer {
			fmt.Fprintf(w, "  %-10s noise buffer, initial %g (past noise: checkpointed, never shown or written out)\n", s.Name, s.Init)
			continue
		}
		fmt.Fprintf(w, "  %-10s initial %g\n", s.Name, s.Init)
	}
	if o := x.Observe; o != nil {
		fmt.Fprintf(w, "\nobserve %s (host, per step):\n", o.Kind)
		for _, a := range o.Args {
			fmt.Fprintf(w, "  %-10s = %s = %g at t = 0\n", a.Name, a.Expr, a.Value)
		}
	}
	if len(x.Scalars) > 0 {
		fmt.Fprintf(w, "\nscalars (host, float64; an update reads the scalars of the step before; values after the host block of step t):\n")
		for _, s := range x.Scalars {
			fmt.Fprintf(w, "  %-10s initial %s; %s = %s\n", s.Name, s.Init, s.Name, s.Update)
			writeSteps(w, s.Steps)
		}
	}
	fmt.Fprintf(w, "\nhost scalars (uniform: computed once per step in float64, passed to the kernel as float32):\n")
	for _, s := range x.HostScalars {
		val := "per step, at sigma_w2 = 1:"
		if s.PerTensor {
			val = "per tensor: from its reductions, after the reduction pass"
		}
		if s.Value != nil {
			val = fmt.Sprintf("= %g", *s.Value)
		}
		fmt.Fprintf(w, "  %-4s = %-40s %s\n", s.Name, s.Expr, val)
		writeSteps(w, s.Steps)
	}
	writeLines(w, x)
	printAttenuation(w, x)
	printNoise(w, x.NoiseFilter)
	fmt.Fprintf(w, "\nnoise (N(0, sigma_w2) per coordinate, drawn in the kernel in the run's mode; docs/noise.md):\n")
	for _, s := range x.Noise {
		fmt.Fprintf(w, "  %-7s %s (%s)\n", s.Mode, s.Version, s.How)
	}
	writeReduce(w, x.Reduce)
	k := x.Kernel
	fmt.Fprintf(w, "\nkernel (varying: per coordinate, float32): reads %s; writes %s; %d operations\n\n%s",
		strings.Join(k.Reads, " "), strings.Join(k.Writes, " "), k.Operations, x.Step)
	if x.HostISA != nil {
		writeHostISA(w, x.HostISA)
	}
	if x.IR != "" {
		fmt.Fprintf(w, "\nIR:\n%s", x.IR)
	}
}

// writeSteps writes values at steps on a line of their own, or nothing.
func writeSteps[V float32 | float64](w io.Writer, steps []AtStep[V]) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "        ")
	for _, v := range steps {
		fmt.Fprintf(w, " t=%d: %g", v.T, v.Value)
	}
	fmt.Fprintln(w)
}
