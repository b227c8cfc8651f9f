package runtime

import (
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/lang"
)

// Tensor is one registered parameter tensor: coordinates
// [Offset, Offset+Len) of the optimizer's flat buffers.
type Tensor struct {
	Name        string
	Offset, Len int
	o           *Optimizer
	init        []float32 // the values given to Register, until the buffers exist
	bad         int       // the first non-finite entry of the last SetGrad, or -1
	badValue    float32
}

// SetGrad sets the tensor's gradient for the next step: the clipped mean
// over the batch of the per-example gradients (the step adds the noise). It
// notes a NaN or ±Inf among them, which makes Step refuse the step.
func (t *Tensor) SetGrad(g []float32) error {
	if len(g) != t.Len {
		return fmt.Errorf("runtime: gradient of %s has %d values, the tensor %d", t.Name, len(g), t.Len)
	}
	if err := t.o.ready(); err != nil {
		return err
	}
	if err := t.o.back.write(1, t.Offset, g); err != nil {
		return err
	}
	t.bad = firstNonFinite(g)
	if t.bad >= 0 {
		t.badValue = g[t.bad]
	}
	return nil
}

// firstNonFinite returns the index of the first NaN or ±Inf in g, or -1.
func firstNonFinite(g []float32) int {
	for i, x := range g {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}

// Params returns a copy of the tensor's current parameters.
func (t *Tensor) Params() ([]float32, error) {
	if t.o.back == nil && t.o.bufs == nil {
		return slices.Clone(t.init), nil
	}
	if err := t.o.ready(); err != nil {
		return nil, err
	}
	return t.o.back.read(0, t.Offset, t.Len)
}

// State returns a copy of the tensor's part of the named state.
func (t *Tensor) State(name string) ([]float32, error) {
	i := slices.Index(t.o.prog.Func.States, name)
	if i < 0 {
		return nil, fmt.Errorf("runtime: %s has no state %s (its states: %v)", t.o.Name(), name, t.o.prog.Func.States)
	}
	if err := t.o.ready(); err != nil {
		return nil, err
	}
	return t.o.back.read(2+i, t.Offset, t.Len)
}

// Lookahead returns a copy of the tensor's part of the look-ahead point of
// the next step, θ_t + γ·(θ_t − θ_{t−1}), where a two_point optimizer's
// trainer evaluates ∇f(·; ξ) for the first term of the observation
// (Optimizer.Observation). The step writes it into the state
// lang.LookaheadState; before the first step it is θ_0 (d_{−1} = 0).
func (t *Tensor) Lookahead() ([]float32, error) {
	if t.o.prog.Func.MixingWeight() < 0 {
		return nil, fmt.Errorf("runtime: %s has no two_point observation, so no look-ahead point", t.o.Name())
	}
	if t.o.t == 0 {
		return t.Params()
	}
	return t.State(lang.LookaheadState)
}

// Grad returns a copy of the tensor's part of the gradient buffer: what
// SetGrad wrote, or the clipped sum over DP.BatchSize that Privatize wrote
// (the step adds the noise in the kernel and leaves the buffer as it was).
func (t *Tensor) Grad() ([]float32, error) {
	if err := t.o.ready(); err != nil {
		return nil, err
	}
	return t.o.back.read(1, t.Offset, t.Len)
}
