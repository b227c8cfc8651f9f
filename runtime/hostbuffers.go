package runtime

import (
	"fmt"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/backend"
)

// UseBuffers makes the optimizer step buffers the trainer owns, in place,
// instead of flat buffers of its own: bufs holds theta, g, then the states,
// in the order of Manifest().Buffers, n float32s each, e.g. memory a
// PyTorch trainer allocated, seen from Go (the binding in python/ does
// this through the C ABI of package capi). It is the host twin of
// StepDevice. The optimizer must run on the host (Backend CPU or Go),
// have no tensors with values of its own (Register) and not have started;
// ranges (RegisterRange) must cover n, and each steps with its own hypers;
// Options.Offset places the buffers' coordinate 0 in the global noise
// index, as for shards.
//
// UseBuffers sets the states to their initial values under the current
// hypers (each range's under its own); theta and g are not touched. From
// then on Len() is n, Step steps the buffers (refusing, with a
// *NonFiniteError naming buffer "g", a gradient with a NaN or ±Inf, and
// changing nothing), Privatize writes the clipped sum into g, and Save and
// Load carry everything but the buffers —
// the step counter, the seed, the hypers, the DP settings — as for
// StepDevice: the buffers are the trainer's to checkpoint.
//
// The buffers must not overlap and must stay valid and not written by
// anyone else while a method of the optimizer runs. Where the trainer's
// memory moves between calls (its values with it), UseBuffers again with
// the new buffers, of the same length, points the optimizer at them; only
// the first call sets the states.
func (o *Optimizer) UseBuffers(bufs [][]float32) error {
	host := make([]backend.Host, len(bufs))
	for i, b := range bufs {
		host[i] = backend.Float32s(b)
	}
	return o.UseHostBuffers(host)
}

// HostBuffer is one of the trainer's host buffers for UseHostBuffers: n
// float32s, or, for a state stored as a 16-bit type (docs/dsl.md,
// "Storage types"), its n stored 16-bit values (DType and U16).
type HostBuffer = backend.Host

// UseHostBuffers is UseBuffers for buffers of any storage: a state
// declared `state m: bf16 = 0` is given as the trainer's bfloat16 memory,
// which the kernels step in place (HostBuffer).
func (o *Optimizer) UseHostBuffers(host []HostBuffer) error {
	defer o.lock()()
	if err := o.checkUseBuffers(host); err != nil {
		return err
	}
	if o.callerBuffers {
		if o.back != nil {
			if err := o.back.Rebind(host); err != nil {
				return err
			}
		}
		o.bufs = host
		return nil
	}
	if err := o.initStates(host[ir.FirstState:]); err != nil {
		return err
	}
	n := o.n
	o.bufs, o.n = host, host[ir.ThetaBuffer].Len()
	if err := o.ready(); err != nil {
		o.bufs, o.n = nil, n
		return err
	}
	o.callerBuffers = true
	return nil
}

// checkUseBuffers checks UseBuffers' arguments and the optimizer's state.
func (o *Optimizer) checkUseBuffers(bufs []backend.Host) error {
	switch {
	case o.opts.Backend.onDevice():
		return fmt.Errorf("runtime: UseBuffers takes host memory; a %s optimizer steps device buffers with StepDevice", o.opts.Backend)
	case o.ownsTensors():
		return fmt.Errorf("runtime: UseBuffers: %s has registered tensors, which own its buffers", o.Name())
	case !o.callerBuffers && (o.back != nil || o.bufs != nil):
		return fmt.Errorf("runtime: UseBuffers: %s has its buffers already", o.Name())
	case len(bufs) != len(o.m.Buffers):
		return fmt.Errorf("runtime: UseBuffers: %d buffers given, %s takes %d: %v", len(bufs), o.Name(), len(o.m.Buffers), o.m.Buffers)
	}
	n := bufs[ir.ThetaBuffer].Len()
	if err := o.checkRangesLen("UseBuffers", n); err != nil {
		return err
	}
	if o.callerBuffers && n != o.n {
		return fmt.Errorf("runtime: UseBuffers: %s steps buffers of %d values, not %d", o.Name(), o.n, n)
	}
	for i, b := range bufs {
		if want := o.storages[i].DType; b.DType.Name() != want.Name() { // "" and f32 are float32
			return fmt.Errorf("runtime: UseBuffers: buffer %s is %s memory; %s stores it as %s", o.bufName(i), b.DType.Name(), o.Name(), want.Name())
		}
		if b.Len() != n {
			return fmt.Errorf("runtime: UseBuffers: buffer %s holds %d values, %s %d", o.bufName(i), b.Len(), o.bufName(ir.ThetaBuffer), n)
		}
		for j, c := range bufs[:i] {
			if n > 0 && overlap(b, c) {
				return fmt.Errorf("runtime: UseBuffers: buffers %s and %s overlap", o.bufName(j), o.bufName(i))
			}
		}
	}
	return nil
}

// overlap reports whether two non-empty buffers share memory.
func overlap(a, b backend.Host) bool {
	pa, pb := uintptr(a.Pointer()), uintptr(b.Pointer())
	return pa < pb+uintptr(b.Bytes()) && pb < pa+uintptr(a.Bytes())
}

// CheckGradient returns the error that Step would return for the gradient
// set now — a *NonFiniteError, or the refusal of a gradient stepped on
// already or not privatized (TrustClippedGradient) — or nil, changing
// nothing: a trainer stepping several optimizers as one (a binding's
// parameter groups) checks them all before it steps any.
func (o *Optimizer) CheckGradient() error {
	defer o.lock()()
	return o.checkGradient()
}

func (o *Optimizer) checkGradient() error {
	if !o.callerBuffers {
		if err := o.releasableHost(); err != nil {
			return err
		}
		return o.checkGradients()
	}
	if err := o.ready(); err != nil {
		return err
	}
	if err := o.releasableHost(); err != nil {
		return err
	}
	bad, v, err := o.back.FirstNonFinite(backend.Memory{})
	if err != nil || bad < 0 {
		return err
	}
	return &NonFiniteError{Tensor: o.m.Buffers[ir.GradBuffer].Name, Index: bad, Value: v}
}
