package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime"
)

// stateOut is one --state-out NAME=FILE.npy: write state NAME after the
// last step.
type stateOut struct{ name, path string }

// stateOutsFlag collects the repeated --state-out.
type stateOutsFlag []stateOut

func (l *stateOutsFlag) repeatable() {}
func (l *stateOutsFlag) String() string {
	var parts []string
	for _, s := range *l {
		parts = append(parts, s.name+"="+s.path)
	}
	return strings.Join(parts, " ")
}

func (l *stateOutsFlag) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return errors.New("want NAME=FILE.npy, NAME a state of the optimizer")
	}
	*l = append(*l, stateOut{name, path})
	return nil
}

// checkNames checks that every state named is one of fn's.
func (l stateOutsFlag) checkNames(fn *ir.Func) error {
	for _, s := range l {
		if slices.Contains(fn.NoiseBuffers(), s.name) {
			return fmt.Errorf("--state-out %s=%s: %s is a noise buffer of %s: it holds past noise, which with the outputs would reveal the gradients, so fibergen never writes it out", s.name, s.path, s.name, fn.Name)
		}
		all := slices.Concat(fn.States, fn.LineStateNames())
		if slices.Contains(all, s.name) {
			continue
		}
		states := "it has no states"
		if len(all) > 0 {
			states = "its states: " + strings.Join(all, ", ")
		}
		return fmt.Errorf("--state-out %s=%s: %s has no state %s (%s)", s.name, s.path, fn.Name, s.name, states)
	}
	return nil
}

// files are the outputs as flag and path, for checkOutputs.
func (l stateOutsFlag) files() []file {
	var out []file
	for _, s := range l {
		out = append(out, file{"--state-out " + s.name, s.path})
	}
	return out
}

// State concatenates the tensors' parts of the named state: for a state
// per row or per column, each tensor's values per row or column.
func (ts tensors) State(name string) ([]float32, error) {
	return ts.concat(func(t *runtime.Tensor) ([]float32, error) { return t.State(name) })
}
