package main

import (
	"fmt"
	"io"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime"
)

// diagEngine is an engine that prints the clamp_mass diagnostic after each
// step: `step T: clamp_mass = X`, one line per step, T from 0, X the
// float64 value with the digits that read it back exactly. It computes the
// value with the interpreter (the reference, bit-identical with the
// kernels) from the states the step left.
type diagEngine struct {
	runtime.Engine
	p   *interp.Program
	d   *interp.Diagnostic
	h   []float64
	out io.Writer
	num []float32
	den []float32
}

// withDiagnostics wraps e in a diagEngine when --diagnostics is given.
func (o *runOptions) withDiagnostics(e runtime.Engine, p *interp.Program, h []float64) (runtime.Engine, error) {
	if !o.diagnostics {
		return e, nil
	}
	d, err := p.Diagnostic(runtime.ClampMassKind)
	if err != nil {
		return nil, fmt.Errorf("--diagnostics: %v", err)
	}
	return &diagEngine{Engine: e, p: p, d: d, h: h, out: o.stdout}, nil
}

// Step runs the step, then prints its clamp_mass.
func (e *diagEngine) Step(t int, sigmaW2 float64, theta, g []float32, states [][]float32) error {
	if err := e.Engine.Step(t, sigmaW2, theta, g, states); err != nil {
		return err
	}
	if n := reduce.ReduceChunks(len(theta)); n != len(e.num) {
		e.num, e.den = make([]float32, n), make([]float32, n)
	}
	scalars := e.p.KernelScalars(e.p.HostScalars(e.h, t, sigmaW2), sigmaW2)
	if err := e.d.Partials(scalars, states, e.num, e.den); err != nil {
		return err
	}
	return printClampMass(e.out, t, reduce.Ratio(e.num, e.den))
}

// printClampMass prints the --diagnostics line of step t.
func printClampMass(w io.Writer, t int, x float64) error {
	_, err := fmt.Fprintf(w, "step %d: clamp_mass = %v\n", t, x)
	return err
}
