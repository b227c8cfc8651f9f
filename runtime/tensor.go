package runtime

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// Tensor is one registered parameter tensor: coordinates
// [Offset, Offset+Len) of the optimizer's flat buffers.
type Tensor struct {
	Name        string
	Offset, Len int
	// shape is the dimensions given to RegisterShaped or SetShape; nil:
	// one row (Shape).
	shape    []int
	o        *Optimizer
	init     []float32 // the values given to Register, until the buffers exist
	bad      int       // the first non-finite entry of the last SetGrad, or -1
	badValue float32
	// grad says where the gradient came from since the last step
	// (release.go): Step refuses to step on a gradient it has stepped on.
	grad gradSource
	// overrides are the tensor's own hypers (SetHypers), and hypers the
	// setting they make with the optimizer's; nil: none.
	overrides map[string]float64
	hypers    []float64
	// ranged: a range of the trainer's buffers (RegisterRange), with no
	// values of its own.
	ranged bool
}

// SetGrad sets the tensor's gradient for the next step: the clipped mean
// over the batch of the per-example gradients (the step adds the noise). It
// notes a NaN or ±Inf among them, which makes Step refuse the step. Under
// DP settings the runtime steps on it only once TrustClippedGradient says
// the trainer clipped it (Privatize clips it in the runtime instead);
// under SetNoise it steps as it is.
func (t *Tensor) SetGrad(g []float32) error {
	defer t.o.lock()()
	if t.ranged {
		return fmt.Errorf("runtime: SetGrad: tensor %s is a range of the trainer's buffers: write its gradient there and say so with GradientWritten", t.Name)
	}
	if len(g) != t.Len {
		return fmt.Errorf("runtime: gradient of %s has %d values, the tensor %d", t.Name, len(g), t.Len)
	}
	if err := t.o.ready(); err != nil {
		return err
	}
	if err := t.o.back.Write(ir.GradBuffer, t.Offset, g); err != nil {
		return err
	}
	t.bad = firstNonFinite(g)
	if t.bad >= 0 {
		t.badValue = g[t.bad]
	}
	t.grad = gradWritten
	return nil
}

// firstNonFinite returns the index of the first NaN or ±Inf in g, or -1.
// It screens blocks two floats at a time: a float's exponent bits plus
// 0x00800000 reach bit 31 exactly when they are all ones, and two floats
// in a uint64 do not carry into each other.
func firstNonFinite(g []float32) int {
	const block = 1024
	head := 0
	for head < len(g) && uintptr(unsafe.Pointer(&g[head]))%8 != 0 {
		head++
	}
	if i := scanNonFinite(g[:head]); i >= 0 {
		return i
	}
	for lo := head; lo < len(g); lo += block {
		hi := min(lo+block, len(g))
		if acc := pairBits(g[lo:hi]); acc&0x8000000080000000 != 0 {
			if i := scanNonFinite(g[lo:hi]); i >= 0 {
				return lo + i
			}
		}
		if (hi-lo)%2 == 1 && scanNonFinite(g[hi-1:hi]) == 0 { // the odd last float
			return hi - 1
		}
	}
	return -1
}

// pairBits ORs, over the pairs of floats of g (8-byte aligned), each
// pair's exponent bits plus 0x00800000 per float: bit 31 of either half is
// set where a float of that half is NaN or ±Inf. A last odd float is not
// read; nor is anything when g holds less than a pair, where converting
// &g[0] to a *uint64 would point past g (checkptr, under -race, says so).
func pairBits(g []float32) uint64 {
	if len(g) < 2 {
		return 0
	}
	var acc uint64
	for _, v := range unsafe.Slice((*uint64)(unsafe.Pointer(&g[0])), len(g)/2) {
		acc |= v&0x7f8000007f800000 + 0x0080000000800000
	}
	return acc
}

// scanNonFinite is firstNonFinite one float at a time.
func scanNonFinite(g []float32) int {
	for i, x := range g {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}

// Params returns a copy of the tensor's current parameters.
func (t *Tensor) Params() ([]float32, error) {
	defer t.o.lock()()
	return t.params()
}

func (t *Tensor) params() ([]float32, error) {
	if t.o.back == nil && t.o.bufs == nil {
		return slices.Clone(t.init), nil
	}
	if err := t.o.ready(); err != nil {
		return nil, err
	}
	return t.o.back.Read(ir.ThetaBuffer, t.Offset, t.Len)
}

// State returns a copy of the tensor's part of the named state.
func (t *Tensor) State(name string) ([]float32, error) {
	defer t.o.lock()()
	if slices.Contains(t.o.prog.Func.NoiseBuffers(), name) {
		return nil, fmt.Errorf("runtime: %s is a noise buffer of %s: it holds past noise, which with the outputs would reveal the gradients, so the runtime never hands it out", name, t.o.Name())
	}
	return t.state(name)
}

func (t *Tensor) state(name string) ([]float32, error) {
	fn := t.o.prog.Func
	if k := slices.Index(fn.LineStateNames(), name); k >= 0 {
		return t.lineState(k)
	}
	i := slices.Index(fn.States, name)
	if i < 0 {
		return nil, fmt.Errorf("runtime: %s has no state %s (its states: %v)", t.o.Name(), name, slices.Concat(fn.States, fn.LineStateNames()))
	}
	if err := t.o.ready(); err != nil {
		return nil, err
	}
	return t.o.back.Read(ir.FirstState+i, t.Offset, t.Len)
}

// Lookahead returns a copy of the tensor's part of the look-ahead point of
// the next step, θ_t + γ·(θ_t − θ_{t−1}), where a two_point optimizer's
// trainer evaluates ∇f(·; ξ) for the first term of the observation
// (Optimizer.Observation). The step writes it into the state
// lang.LookaheadState; before the first step it is θ_0 (d_{−1} = 0).
func (t *Tensor) Lookahead() ([]float32, error) {
	defer t.o.lock()()
	switch b := t.o.lookaheadBuffer(); b {
	case -1:
		return nil, fmt.Errorf("runtime: %s has no two_point observation, so no look-ahead point", t.o.Name())
	case 0:
		return t.params()
	default:
		return t.state(t.o.m.Buffers[b].Name)
	}
}

// LookaheadBuffer is the index in Manifest().Buffers of the buffer that
// holds the look-ahead point of the next step (Tensor.Lookahead): 0, theta
// itself, before the first step; the state lang.LookaheadState after;
// -1 for an optimizer without a two_point observation.
func (o *Optimizer) LookaheadBuffer() int {
	defer o.lock()()
	return o.lookaheadBuffer()
}

func (o *Optimizer) lookaheadBuffer() int {
	switch {
	case o.prog.Func.MixingWeight() < 0:
		return -1
	case o.t == 0:
		return ir.ThetaBuffer
	}
	if i := slices.Index(o.prog.Func.States, lang.LookaheadState); i >= 0 {
		return ir.FirstState + i
	}
	return -1 // lowering adds the state to every two_point optimizer; a hand-made manifest may lack it
}

// Grad returns a copy of the tensor's part of the gradient buffer: what
// SetGrad wrote, or the clipped sum over DP.BatchSize that Privatize wrote
// (the step adds the noise in the kernel and leaves the buffer as it was).
func (t *Tensor) Grad() ([]float32, error) {
	defer t.o.lock()()
	if err := t.o.ready(); err != nil {
		return nil, err
	}
	return t.o.back.Read(ir.GradBuffer, t.Offset, t.Len)
}
