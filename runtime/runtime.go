// Package runtime links fibergen's generated kernels into trainers.
//
// Optimizer is what a trainer uses: Open reads generated/<name>/ (the
// manifest <name>.json and the kernel: <name>.so for the CPU, <name>.ptx for
// CUDA) — never the .dsl, never LLVM — Register adds the model's parameter
// tensors to one flat buffer per role (parameters, gradient, each state), so
// a step is one kernel launch however many tensors there are; SetHyper,
// SetDP (σ_w = σ_DP·C/B) and SetSeed configure it; every iteration the
// trainer sets each tensor's clipped mean gradient and calls Step, which
// draws the DP noise inside the kernel. A gradient with a NaN or ±Inf makes
// Step change nothing and return a *NonFiniteError. Save and Load write and
// read checkpoints; Options.Offset and StepDevice serve sharded trainers and
// trainers that own their device buffers. docs/runtime.md is the guide.
//
// Engine and Run are the lower-level driver `fibergen run` uses over a
// stream of gradients in .npy files (runtime/npy).
package runtime

import "fmt"

// Engine runs one optimizer's step over float32 buffers.
type Engine interface {
	// NumStates is the number of state buffers the optimizer keeps.
	NumStates() int
	// Init sets every state buffer to its initial value.
	Init(states [][]float32) error
	// Step runs step t (from 0) with the privatized gradient g and the DP
	// noise variance sigmaW2, updating theta and the states in place.
	Step(t int, sigmaW2 float64, theta, g []float32, states [][]float32) error
}

// Run applies len(grads)/len(theta) steps to theta from freshly initialized
// states: grads holds the gradients of every step, step after step, each
// len(theta) long. It returns the final states.
func Run(e Engine, theta, grads []float32, sigmaW2 float64) ([][]float32, error) {
	n := len(theta)
	if n == 0 && len(grads) != 0 || n != 0 && len(grads)%n != 0 {
		return nil, fmt.Errorf("gradients hold %d values, not a whole number of steps of %d", len(grads), n)
	}
	states := make([][]float32, e.NumStates())
	for i := range states {
		states[i] = make([]float32, n)
	}
	if err := e.Init(states); err != nil {
		return nil, err
	}
	for t := 0; n > 0 && (t+1)*n <= len(grads); t++ {
		if err := e.Step(t, sigmaW2, theta, grads[t*n:(t+1)*n], states); err != nil {
			return nil, fmt.Errorf("step %d: %w", t, err)
		}
	}
	return states, nil
}
