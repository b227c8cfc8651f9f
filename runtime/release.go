package runtime

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/fibergen/fibergen/ir"
)

// A gradient is released once (docs/runtime.md, "A gradient is released
// once"). Each step releases the gradient it reads: the kernel adds fresh
// noise to it and the parameters carry the result. A second step on the
// same gradient releases the batch twice, with other noise, while the
// accountant counts it once; a step on a gradient no privatization wrote —
// a raw gradient from a backward pass — releases it unclipped, with noise
// calibrated for norm C. So every gradient carries where it came from, and
// a step consumes it:
//
//   - Privatize (and PrivatizeTo, PrivatizeDevice into the optimizer's
//     gradient, or AdoptPrivatized of another optimizer's privatization
//     that covers it) marks it privatized: clipped to C and averaged over B
//     by the runtime itself;
//   - SetGrad, and GradientWritten for buffers the trainer owns, mark it
//     written: a value the runtime cannot vouch for;
//   - TrustClippedGradient marks a written gradient trusted: the trainer
//     says it clipped and averaged it itself, which no accountant can check.
//
// Step refuses a gradient that was not set since the last step, and, under
// DP settings (SetDP, SetBudget), a written one: only a privatized or a
// trusted gradient is released as private. Under SetNoise, where the
// trainer gives σ_w² itself (replaying recorded clipped means, or
// gradients privatized already with Draw false), a written gradient steps.
// Options.AllowGradientReuse lifts the first rule, for benchmarks: a step
// may run again on the gradient it stepped on.

// gradSource says where the gradient of the next step came from.
type gradSource uint8

const (
	gradNone       gradSource = iota // nothing since the last step
	gradWritten                      // set by the trainer: SetGrad, GradientWritten
	gradTrusted                      // vouched for by the trainer: TrustClippedGradient
	gradPrivatized                   // written by a privatization of the runtime
)

// memRange is the memory [lo, hi) a privatization wrote, in bytes: host
// addresses, or device addresses on the optimizer's device.
type memRange struct {
	lo, hi uint64
	device bool
}

// holds reports whether r covers s; an empty s is covered by any range.
func (r memRange) holds(s memRange) bool {
	return s.lo == s.hi || r.device == s.device && r.lo <= s.lo && s.hi <= r.hi
}

func (r memRange) String() string {
	where := "host"
	if r.device {
		where = "device"
	}
	return fmt.Sprintf("%s memory [%#x, %#x)", where, r.lo, r.hi)
}

// hostRange is the memory of s.
func hostRange(s []float32) memRange {
	if len(s) == 0 {
		return memRange{}
	}
	lo := uint64(uintptr(unsafe.Pointer(&s[0])))
	return memRange{lo: lo, hi: lo + 4*uint64(len(s))}
}

// deviceRange is the device memory of n floats at p.
func deviceRange(p DevicePtr, n int) memRange {
	return memRange{lo: uint64(p), hi: uint64(p) + 4*uint64(n), device: true}
}

// gradMark is where the gradient of buffers the trainer owns came from:
// for a privatized one, the memory the privatization wrote, which the
// gradient stepped must lie in.
type gradMark struct {
	src gradSource
	at  memRange
}

// privRecord is an optimizer's last privatization into memory: what
// AdoptPrivatized hands on to the optimizers whose gradient it covers.
type privRecord struct {
	adoption // the optimizer's id and 1, 2, … per privatization; 0: none yet
	at       memRange
	dp       DP
}

// adoption names a privatization: the id of the optimizer that made it
// (Optimizer.id) and its generation there.
type adoption struct {
	src, gen uint64
}

// optimizerIDs numbers the optimizers opened, for adoption.
var optimizerIDs atomic.Uint64

// releasable refuses to release the gradient named name, which came from
// src: one already released, or, under DP settings, one written outside a
// privatization and not vouched for.
func (o *Optimizer) releasable(kind, name string, src gradSource) error {
	switch { // kind and name apart: the message is made only for a refusal, not at every step
	case src == gradNone && !o.opts.AllowGradientReuse:
		return fmt.Errorf("runtime: Step: no gradient for %s since the last step (step %d is next): privatize the next batch "+
			"(Privatize) or set it, for each step, since a step on the same gradient releases the same batch again, which the "+
			"privacy accounting does not count", kind+" "+name, o.t)
	case src == gradWritten && o.noise == nil:
		return fmt.Errorf("runtime: Step: the gradient of %s was written outside Privatize (SetGrad, or a write into the "+
			"trainer's buffer such as a backward pass), and under DP settings a step releases only a privatized gradient: "+
			"Privatize the per-example gradients, or, if the trainer clipped and averaged them itself, say so with "+
			"TrustClippedGradient (trust_clipped_grad() in PyTorch), which the accountant takes on trust", kind+" "+name)
	}
	return nil
}

// releasableHost checks the gradient of the next Step: every registered
// tensor's, or that of the trainer's host buffers (UseBuffers).
func (o *Optimizer) releasableHost() error {
	if !o.callerBuffers {
		for _, t := range o.tensors {
			if err := o.releasable("tensor", t.Name, t.grad); err != nil {
				return err
			}
		}
		return nil
	}
	return o.releasableAt(hostRange(o.bufs[ir.GradBuffer].F32))
}

// releasableAt checks the gradient of the trainer's buffers, at g.
func (o *Optimizer) releasableAt(g memRange) error {
	if err := o.releasable("buffer", o.bufName(ir.GradBuffer), o.grad.src); err != nil {
		return err
	}
	if o.grad.src == gradPrivatized && !o.grad.at.holds(g) {
		return fmt.Errorf("runtime: Step: the gradient stepped, %v, is not the one privatized, %v: privatize into the "+
			"gradient the step reads", g, o.grad.at)
	}
	return nil
}

// released marks the gradient consumed by a step, and the privatization
// adopted for it, if any, stepped on.
func (o *Optimizer) released() {
	for _, t := range o.tensors {
		t.grad = gradNone
	}
	o.grad = gradMark{}
	if a := o.adopted; a.gen > 0 {
		if o.consumed == nil {
			o.consumed = map[uint64]uint64{}
		}
		o.consumed[a.src] = max(o.consumed[a.src], a.gen)
		o.adopted = adoption{}
	}
}

// privatized marks the gradient privatized where a privatization wrote
// at, with the DP settings of the moment, and records it for
// AdoptPrivatized; own says it wrote the optimizer's own gradient buffer.
func (o *Optimizer) privatized(at memRange, own bool) {
	o.lastPriv = privRecord{adoption: adoption{o.id, o.lastPriv.gen + 1}, at: at, dp: *o.dp}
	if own {
		for _, t := range o.tensors {
			t.bad, t.grad = -1, gradPrivatized
		}
	}
	// Device buffers are named at each step, which checks them (releasableAt).
	if o.trainerBuffers() && (!o.callerBuffers || at.holds(hostRange(o.bufs[ir.GradBuffer].F32))) {
		o.grad = gradMark{src: gradPrivatized, at: at}
	}
}

// trainerBuffers reports whether the optimizer steps buffers the trainer
// owns: host ones (UseBuffers), or device ones (StepDevice, a CUDA
// optimizer without tensors of values of its own).
func (o *Optimizer) trainerBuffers() bool {
	return o.callerBuffers || o.opts.Backend.onDevice() && !o.ownsTensors()
}

// dpChanged downgrades a privatized or trusted gradient to a written one
// where the clipping norm or the batch size change: it was clipped and
// averaged for the old ones, and the new noise is calibrated to the new.
func (o *Optimizer) dpChanged(old *DP) {
	if sameClipping(old, o.dp) {
		return
	}
	o.ghost = nil // scales of the old clipping
	downgrade := func(s *gradSource) {
		if *s == gradPrivatized || *s == gradTrusted {
			*s = gradWritten
		}
	}
	for _, t := range o.tensors {
		downgrade(&t.grad)
	}
	downgrade(&o.grad.src)
}

// GradientWritten says that the trainer wrote a new gradient into the
// buffers it owns (UseBuffers, StepDevice), which the runtime cannot see:
// under SetNoise the next step may release it; under DP settings it must
// be privatized or vouched for (TrustClippedGradient). A binding calls it
// when its framework writes the gradient (a backward pass into the
// buffer), so that a later step knows. Registered tensors are marked by
// SetGrad instead.
func (o *Optimizer) GradientWritten() error {
	defer o.lock()()
	if err := o.checkCallerGradient("GradientWritten"); err != nil {
		return err
	}
	o.grad = gradMark{src: gradWritten}
	return nil
}

// TrustClippedGradient says that the gradient set since the last step —
// with SetGrad on every registered tensor, or written into the trainer's
// buffers and marked so (GradientWritten) — is the mean over the batch of
// per-example gradients the trainer clipped to norm DP.ClipNorm itself (its
// own clipping, ghost clipping with ClipScales): the runtime cannot check
// it, and the accountant takes it on trust. It holds for the next step
// only; a step under DP settings otherwise releases only what Privatize
// wrote. A gradient not set since the last step is refused: trust does not
// make a released gradient new.
func (o *Optimizer) TrustClippedGradient() error {
	defer o.lock()()
	if o.trainerBuffers() {
		if o.grad.src == gradNone {
			return fmt.Errorf("runtime: TrustClippedGradient: no gradient in buffer %s since the last step: write one first "+
				"(GradientWritten marks it)", o.bufName(ir.GradBuffer))
		}
		o.grad = gradMark{src: gradTrusted}
		return nil
	}
	if o.hasRanges() {
		return fmt.Errorf("runtime: TrustClippedGradient: %s: %w", o.Name(), errRangesNeedBuffers)
	}
	for _, t := range o.tensors {
		if t.grad == gradNone {
			return fmt.Errorf("runtime: TrustClippedGradient: tensor %s has no gradient since the last step: SetGrad it first", t.Name)
		}
	}
	for _, t := range o.tensors {
		if t.grad == gradWritten {
			t.grad = gradTrusted
		}
	}
	return nil
}

// checkCallerGradient refuses what of marks the gradient of buffers the
// trainer owns on an optimizer with registered tensors.
func (o *Optimizer) checkCallerGradient(what string) error {
	if o.trainerBuffers() {
		return nil
	}
	if o.ownsTensors() {
		return fmt.Errorf("runtime: %s is for buffers the trainer owns (UseBuffers, StepDevice); %s has registered tensors, which SetGrad marks", what, o.Name())
	}
	return fmt.Errorf("runtime: %s: %s steps no buffers of the trainer's yet (UseBuffers)", what, o.Name())
}

// lastPrivatization returns the optimizer's last privatization into
// memory.
func (o *Optimizer) lastPrivatization() privRecord {
	defer o.lock()()
	return o.lastPriv
}

// AdoptPrivatized marks the gradient of the trainer's buffers privatized by
// src's last privatization (PrivatizeTo, PrivatizeDevice), which must have
// written the memory the gradient lies in, with the same clipping norm and
// batch size as this optimizer's DP settings: for a trainer whose clipping
// spans several optimizers, each over a part of one flat gradient (a
// binding's parameter groups), privatized once through one of them. One
// privatization is stepped on once: adopting it, or an earlier one of
// src's, after a step on it is refused.
func (o *Optimizer) AdoptPrivatized(src *Optimizer) error {
	if src == o {
		return errors.New("runtime: AdoptPrivatized: an optimizer's own privatization marks its gradient already")
	}
	rec := src.lastPrivatization() // src's lock, released before o's: no lock order to keep
	defer o.lock()()
	if err := o.checkCallerGradient("AdoptPrivatized"); err != nil {
		return err
	}
	switch {
	case rec.gen == 0:
		return fmt.Errorf("runtime: AdoptPrivatized: %s has not privatized anything", src.Name())
	case !sameClipping(&rec.dp, o.dp):
		return fmt.Errorf("runtime: AdoptPrivatized: the privatization clipped to %s, this optimizer's DP settings are %v",
			rec.dp.clippingString(), o.dpString())
	case rec.gen <= o.consumed[rec.src]:
		return errors.New("runtime: AdoptPrivatized: a step was taken on this privatization already; privatize the next batch")
	}
	if o.callerBuffers && !rec.at.holds(hostRange(o.bufs[ir.GradBuffer].F32)) {
		return fmt.Errorf("runtime: AdoptPrivatized: the privatization wrote %v, not this optimizer's gradient, %v", rec.at, hostRange(o.bufs[ir.GradBuffer].F32))
	}
	o.grad, o.adopted = gradMark{src: gradPrivatized, at: rec.at}, rec.adoption
	return nil
}

// dpString describes the DP settings, or their absence.
func (o *Optimizer) dpString() string {
	if o.dp == nil {
		return "not set (SetDP)"
	}
	return o.dp.clippingString()
}
