package main

import (
	"fmt"
	"io"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
)

// checkSettings is what fibergen run and fibergen explain check of the
// --set settings before any step, one function for both, so that explain
// refuses and warns about exactly what run would: it checks fn's default
// hypers overridden by sets (each in its range, every filter stable: ir's
// ApplySettings; --allow-unstable has dropped the Bounded filters; the
// initial values and host scalars finite: interp's CheckValues) and the
// observation at the steps 0 to steps-1, and returns the warnings to
// print. The observation must be finite whatever the opt-ins, and a
// two_point weight a inside [0, 1] unless extrapolate
// (--allow-extrapolation), where an a outside is one warning, for the
// first step that has it.
func checkSettings(fn *ir.Func, sets []string, steps int, extrapolate bool) (warnings []string, err error) {
	h, err := fn.ApplySettings(sets)
	if err != nil {
		return nil, err
	}
	if err := checkValues(fn, h); err != nil {
		return nil, err
	}
	for t := range steps {
		if err := fn.CheckObservationFinite(h, t); err != nil {
			return nil, err
		}
		err := fn.CheckObservation(h, t)
		switch {
		case err == nil:
		case !extrapolate:
			return nil, fmt.Errorf("%w (--allow-extrapolation)", err)
		case warnings == nil:
			warnings = append(warnings, fmt.Sprintf("%v: opted in with --allow-extrapolation", err))
		}
	}
	return warnings, nil
}

// checkValues refuses hypers h at which an initial value or a host scalar
// of step 0 is not finite (interp's CheckValues, which the runtime checks
// too).
func checkValues(fn *ir.Func, h []float64) error {
	p, err := interp.New(fn)
	if err != nil {
		return err
	}
	return p.CheckValues(h)
}

// warn prints each warning of command cmd as a line on stderr.
func warn(stderr io.Writer, cmd string, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "fibergen %s: warning: %s\n", cmd, w)
	}
}
