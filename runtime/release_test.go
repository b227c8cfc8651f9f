package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// openBuffers opens dp_sgd on host buffers of n coordinates of its own
// making at global offset off (UseBuffers, as a binding does), with the
// DP settings dp.
func openBuffers(t *testing.T, n, off int, dp runtime.DP) (*runtime.Optimizer, [][]float32) {
	t.Helper()
	o := openDP(t, kernelDir(t, "dp_sgd"), runtime.Options{Offset: uint64(off)}, dp)
	bufs := make([][]float32, len(o.Manifest().Buffers))
	for i := range bufs {
		bufs[i] = make([]float32, n)
	}
	if err := o.UseBuffers(bufs); err != nil {
		t.Fatal(err)
	}
	return o, bufs
}

// wantRefused checks that err refuses a release with a message holding
// msg, and that the refused step did not count.
func wantRefused(t *testing.T, o *runtime.Optimizer, steps int, err error, msg string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("got %v, want an error containing %q", err, msg)
	}
	if o.Steps() != steps {
		t.Errorf("the refused step counted: %d steps, want %d", o.Steps(), steps)
	}
}

const (
	stale   = "no gradient for buffer g since the last step"
	written = "written outside Privatize"
)

// TestReleaseOnceCallerBuffers: on the trainer's buffers under DP
// settings, a step releases what a privatization wrote or what the trainer
// vouches for, once; a write after either, or a step again, is refused.
func TestReleaseOnceCallerBuffers(t *testing.T) {
	const n, k = 64, 5
	o, bufs := openBuffers(t, n, 0, testDP)
	wantRefused(t, o, 0, o.Step(), stale)
	copy(bufs[1], exampleRows(1, 1, n)) // a raw gradient, written by the trainer
	if err := o.GradientWritten(); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 0, o.Step(), written)
	if _, err := o.Privatize(exampleRows(2, k, n), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatalf("a step on a privatized gradient: %v", err)
	}
	wantRefused(t, o, 1, o.Step(), stale)
	wantRefused(t, o, 1, o.CheckGradient(), stale)
	if _, err := o.PrivatizeTo(bufs[1], exampleRows(3, k, n), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.GradientWritten(); err != nil { // a backward pass into the privatized gradient
		t.Fatal(err)
	}
	wantRefused(t, o, 1, o.Step(), written)
	if err := errors.Join(o.TrustClippedGradient(), o.Step()); err != nil {
		t.Fatalf("a step on a gradient the trainer vouches for: %v", err)
	}
	wantRefused(t, o, 2, o.Step(), stale)
	other := make([]float32, n) // privatized into memory the step does not read
	if _, err := o.PrivatizeTo(other, exampleRows(4, k, n), nil, nil); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 2, o.Step(), stale)
}

// TestReleaseUnderNoise: where SetNoise gives σ_w² directly (a replay), a
// gradient the trainer wrote steps as it is — once.
func TestReleaseUnderNoise(t *testing.T) {
	o, bufs := openBuffers(t, 16, 0, testDP)
	if err := o.SetNoise(runtime.Noise{SigmaW2: 0.01, Draw: true}); err != nil {
		t.Fatal(err)
	}
	copy(bufs[1], exampleRows(1, 1, 16))
	if err := errors.Join(o.GradientWritten(), o.Step()); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 1, o.Step(), stale)
}

// TestReleaseDPChange: a gradient privatized for one clipping norm and
// batch size is not released under others, whose noise is calibrated to
// another sensitivity.
func TestReleaseDPChange(t *testing.T) {
	o, _ := openBuffers(t, 16, 0, testDP)
	if _, err := o.Privatize(exampleRows(1, 3, 16), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.SetDP(runtime.DP{ClipNorm: testDP.ClipNorm / 2, NoiseMultiplier: testDP.NoiseMultiplier, BatchSize: testDP.BatchSize}); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 0, o.Step(), written)
	if err := o.SetDP(runtime.DP{ClipNorm: testDP.ClipNorm / 2, NoiseMultiplier: 2, BatchSize: testDP.BatchSize}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Privatize(exampleRows(1, 3, 16), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.SetDP(runtime.DP{ClipNorm: testDP.ClipNorm / 2, NoiseMultiplier: 3, BatchSize: testDP.BatchSize}); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Errorf("a step after more noise at the same C and B: %v", err)
	}
}

// TestAdoptPrivatized: optimizers over parts of one flat gradient (a
// binding's parameter groups), privatized once through one of them, each
// step it once; what does not cover an optimizer's gradient, or clipped at
// other settings, is not adopted.
func TestAdoptPrivatized(t *testing.T) {
	const n, cut, k = 40, 12, 4
	a, abufs := openBuffers(t, cut, 0, testDP)
	b, bbufs := openBuffers(t, n-cut, cut, testDP)
	flat := make([]float32, n)
	abufs[1], bbufs[1] = flat[:cut], flat[cut:]
	if err := errors.Join(a.UseBuffers(abufs), b.UseBuffers(bbufs)); err != nil {
		t.Fatal(err)
	}
	if err := b.AdoptPrivatized(a); err == nil || !strings.Contains(err.Error(), "has not privatized") {
		t.Errorf("adopting before any privatization: %v", err)
	}
	if _, err := a.PrivatizeTo(flat, exampleRows(1, k, n), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.AdoptPrivatized(a); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(a.Step(), b.Step()); err != nil {
		t.Fatalf("both steps on the privatization: %v", err)
	}
	if err := b.AdoptPrivatized(a); err == nil || !strings.Contains(err.Error(), "was taken on this privatization already") {
		t.Errorf("adopting a privatization stepped on: %v", err)
	}
	if _, err := a.PrivatizeTo(flat[:cut], exampleRows(2, k, cut), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.AdoptPrivatized(a); err == nil || !strings.Contains(err.Error(), "not this optimizer's gradient") {
		t.Errorf("adopting a privatization of other memory: %v", err)
	}
	c, cbufs := openBuffers(t, n-cut, cut, runtime.DP{ClipNorm: 2 * testDP.ClipNorm, NoiseMultiplier: 1, BatchSize: testDP.BatchSize})
	cbufs[1] = flat[cut:]
	if err := c.UseBuffers(cbufs); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PrivatizeTo(flat, exampleRows(3, k, n), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.AdoptPrivatized(a); err == nil || !strings.Contains(err.Error(), "clipped to C = 1") {
		t.Errorf("adopting a privatization at another C: %v", err)
	}
	if err := a.AdoptPrivatized(a); err == nil {
		t.Error("an optimizer adopted its own privatization")
	}
}

// TestReleaseRegisteredTensors: SetGrad under DP settings steps only with
// the trainer's word that it clipped the gradient; TrustClippedGradient
// wants every tensor set.
func TestReleaseRegisteredTensors(t *testing.T) {
	theta, grads := inputs(1)
	o, ts := openFiber(t, runtime.Options{}, theta)
	if err := ts[0].SetGrad(grads[0][:ts[0].Len]); err != nil {
		t.Fatal(err)
	}
	if err := o.TrustClippedGradient(); err == nil || !strings.Contains(err.Error(), "tensor "+ts[1].Name+" has no gradient") {
		t.Errorf("TrustClippedGradient with a tensor unset: %v", err)
	}
	for _, tn := range ts {
		if err := tn.SetGrad(grads[0][tn.Offset : tn.Offset+tn.Len]); err != nil {
			t.Fatal(err)
		}
	}
	err := o.Step()
	if err == nil || !strings.Contains(err.Error(), "the gradient of tensor a was written outside Privatize") || !strings.Contains(err.Error(), "TrustClippedGradient") {
		t.Errorf("a step on SetGrad alone under DP settings: %v", err)
	}
	if err := o.GradientWritten(); err == nil || !strings.Contains(err.Error(), "registered tensors") {
		t.Errorf("GradientWritten with registered tensors: %v", err)
	}
	if err := errors.Join(o.TrustClippedGradient(), o.Step()); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseUnderBudget: under a privacy budget, a raw gradient is not
// released as private, and a refused step spends nothing.
func TestReleaseUnderBudget(t *testing.T) {
	o, bufs := openBuffers(t, 16, 0, testDP)
	b := runtime.Budget{Epsilon: 1, ClipNorm: 1, Schedule: privacy.Schedule{DatasetSize: 1000, BatchSize: 10, Epochs: 1}}
	if _, err := o.SetBudget(b); err != nil {
		t.Fatal(err)
	}
	copy(bufs[1], []float32{32.6}) // a raw gradient far past C
	if err := o.GradientWritten(); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 0, o.Step(), written)
	if g, _ := o.Spent(); g.Epsilon != 0 {
		t.Errorf("a refused step spent ε = %v", g.Epsilon)
	}
	if _, err := o.Privatize(exampleRows(1, 10, 16), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
	spent, _ := o.Spent()
	wantRefused(t, o, 1, o.Step(), stale)
	if g, _ := o.Spent(); g != spent {
		t.Errorf("a second step on one batch spent ε = %v after %v", g.Epsilon, spent.Epsilon)
	}
}

// TestReleaseOnceNoReplay: neither trust nor adoption makes a released
// gradient new: trusting a gradient not written since the last step is
// refused, and so is adopting again a privatization stepped on, whatever
// came between (a write, another source's privatization).
func TestReleaseOnceNoReplay(t *testing.T) {
	const n, k = 16, 3
	o, bufs := openBuffers(t, n, 0, testDP)
	if _, err := o.Privatize(exampleRows(1, k, n), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
	if err := o.TrustClippedGradient(); err == nil || !strings.Contains(err.Error(), "no gradient in buffer g since the last step") {
		t.Errorf("trusting the gradient stepped on: %v", err)
	}
	wantRefused(t, o, 1, o.Step(), stale)

	a, _ := openBuffers(t, n, 0, testDP)
	b, _ := openBuffers(t, n, 0, testDP)
	for _, src := range []*runtime.Optimizer{a, b} {
		if _, err := src.PrivatizeTo(bufs[1], exampleRows(2, k, n), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	adoptAndStep := func(src *runtime.Optimizer) error {
		return errors.Join(o.AdoptPrivatized(src), o.Step())
	}
	if err := adoptAndStep(a); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(o.GradientWritten(), o.AdoptPrivatized(a)); err == nil || !strings.Contains(err.Error(), "taken on this privatization already") {
		t.Errorf("adopting again after a write: %v", err)
	}
	if err := adoptAndStep(b); err != nil {
		t.Fatal(err)
	}
	if err := o.AdoptPrivatized(a); err == nil || !strings.Contains(err.Error(), "taken on this privatization already") {
		t.Errorf("adopting again after another source's: %v", err)
	}
	if o.Steps() != 3 {
		t.Errorf("%d steps, want 3", o.Steps())
	}
}
