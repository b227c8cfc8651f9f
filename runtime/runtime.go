// Package runtime drives generated optimizers over training data: an Engine
// is one implementation of an optimizer's step (the IR interpreter today;
// the generated host and GPU kernels as they arrive), and Run applies it to
// a stream of gradients. The .npy reader and writer live in runtime/npy.
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
