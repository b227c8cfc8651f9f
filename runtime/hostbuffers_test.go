package runtime_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// callerBuffers opens fiber on buffers of its own making, as a binding
// does (UseBuffers), over theta[lo:hi] at global offset lo.
func callerBuffers(t *testing.T, backend runtime.Backend, theta []float32, lo, hi int) (*runtime.Optimizer, [][]float32) {
	t.Helper()
	o, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{Backend: backend, Offset: uint64(lo)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	o.SetDP(testDP)
	o.SetSeed(2026)
	bufs := make([][]float32, len(o.Manifest().Buffers))
	for i := range bufs {
		bufs[i] = make([]float32, hi-lo)
	}
	copy(bufs[0], theta[lo:hi])
	if err := o.UseBuffers(bufs); err != nil {
		t.Fatal(err)
	}
	return o, bufs
}

// TestUseBuffersMatchesRegister steps the caller's buffers, whole and in
// shards, on the host kernel and the reference: bit for bit the steps of
// registered tensors, states included.
func TestUseBuffersMatchesRegister(t *testing.T) {
	theta, grads := inputs(4)
	want, wts := openFiber(t, runtime.Options{}, theta)
	for _, g := range grads {
		if err := stepAll(want, wts, g); err != nil {
			t.Fatal(err)
		}
	}
	wantBufs := allBuffers(t, want, wts)
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
		cuts := []int{0, 1029, 1030, len(theta)} // an odd cut, and an empty shard
		var got [][]float32
		for i := 1; i < len(cuts); i++ {
			o, bufs := callerBuffers(t, backend, theta, cuts[i-1], cuts[i])
			for _, g := range grads {
				copy(bufs[1], g[cuts[i-1]:cuts[i]])
				o.GradientWritten()      // the trainer wrote a clipped mean,
				o.TrustClippedGradient() // which it vouches for
				if err := o.Step(); err != nil {
					t.Fatal(err)
				}
			}
			if o.Steps() != len(grads) || o.Len() != cuts[i]-cuts[i-1] {
				t.Fatalf("%s: Steps %d, Len %d", backend, o.Steps(), o.Len())
			}
			got = append(got, bufs[0])
			for k, s := range bufs[2:] {
				if !sameBits(s, wantBufs[1+k][cuts[i-1]:cuts[i]]) {
					t.Errorf("%s: state %d of shard %d differs from the registered run", backend, k, i)
				}
			}
		}
		if !sameBits(slices.Concat(got...), wantBufs[0]) {
			t.Errorf("%s: parameters differ from the registered run", backend)
		}
	}
}

// TestUseBuffersMoved: the trainer's buffers move (their values with
// them); UseBuffers points the optimizer at the new ones without setting the
// states again, and the steps go on as if nothing had moved.
func TestUseBuffersMoved(t *testing.T) {
	theta, grads := inputs(4)
	want, wbufs := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	o, bufs := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	for i, g := range grads {
		if i == 2 {
			moved := make([][]float32, len(bufs))
			for k, b := range bufs {
				moved[k] = slices.Clone(b)
				clear(b) // the old memory no longer holds the values
			}
			if err := o.UseBuffers(moved); err != nil {
				t.Fatal(err)
			}
			bufs = moved
		}
		copy(bufs[1], g)
		copy(wbufs[1], g)
		o.GradientWritten()      // the trainer wrote a clipped mean,
		o.TrustClippedGradient() // which it vouches for
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
		want.GradientWritten()
		want.TrustClippedGradient()
		want.Step()
	}
	for k := range bufs {
		if k != 1 && !sameBits(bufs[k], wbufs[k]) {
			t.Errorf("buffer %d differs after the move", k)
		}
	}
	if err := o.UseBuffers(bufs[:len(bufs)-1]); err == nil {
		t.Error("fewer buffers accepted")
	}
	short := make([][]float32, len(bufs))
	for k := range short {
		short[k] = make([]float32, 3)
	}
	if err := o.UseBuffers(short); err == nil {
		t.Error("buffers of another length accepted")
	}
}

// TestUseBuffersGuard: a NaN anywhere in the caller's gradient is refused
// by CheckGradient and by Step, which changes nothing.
func TestUseBuffersGuard(t *testing.T) {
	theta, grads := inputs(1)
	o, bufs := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	copy(bufs[1], grads[0])
	bufs[1][5000] = float32(math.NaN())
	before := [][]float32{slices.Clone(bufs[0]), slices.Clone(bufs[2])}
	var nf *runtime.NonFiniteError
	o.GradientWritten()      // the trainer wrote a clipped mean,
	o.TrustClippedGradient() // which it vouches for
	if err := o.CheckGradient(); !errors.As(err, &nf) || nf.Index != 5000 || nf.Tensor != "g" {
		t.Fatalf("CheckGradient: %v, want a NonFiniteError at g[5000]", err)
	}
	if err := o.Step(); !errors.As(err, &nf) || nf.Index != 5000 {
		t.Fatalf("Step: %v", err)
	}
	if o.Steps() != 0 || !sameBits(bufs[0], before[0]) || !sameBits(bufs[2], before[1]) {
		t.Error("a refused step changed the buffers or the step counter")
	}
}

// TestUseBuffersCheckpoint: a checkpoint of an optimizer on the caller's
// buffers holds no buffers, CheckCheckpoint judges it as LoadFrom does,
// and it resumes the step counter, seed and hypers.
func TestUseBuffersCheckpoint(t *testing.T) {
	theta, grads := inputs(2)
	o, bufs := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	o.SetHyper("omega", 0.5)
	o.SetSeed(77)
	for _, g := range grads {
		copy(bufs[1], g)
		o.GradientWritten()      // the trainer wrote a clipped mean,
		o.TrustClippedGradient() // which it vouches for
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
	}
	data := saveBytes(t, o)
	if len(data) > 2048 {
		t.Errorf("the checkpoint has %d bytes: it should hold no buffers", len(data))
	}
	fresh, _ := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	if err := fresh.CheckCheckpoint(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if fresh.Steps() != 0 {
		t.Fatal("CheckCheckpoint loaded")
	}
	if err := fresh.LoadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if w, _ := fresh.Hyper("omega"); fresh.Steps() != 2 || fresh.Seed() != 77 || w != 0.5 {
		t.Errorf("resumed at step %d, seed %d, omega %v", fresh.Steps(), fresh.Seed(), w)
	}
	damaged := slices.Clone(data)
	damaged[len(damaged)-40] ^= 1
	if err := fresh.CheckCheckpoint(bytes.NewReader(data)); !errors.Is(err, runtime.ErrStepped) {
		t.Errorf("CheckCheckpoint after steps: %v, want ErrStepped", err)
	}
	other, _ := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	if err := other.CheckCheckpoint(bytes.NewReader(damaged)); !errors.Is(err, runtime.ErrCheckpointCorrupted) {
		t.Errorf("damaged: %v", err)
	}
	shard, _ := callerBuffers(t, runtime.CPU, theta, 4, len(theta))
	if err := shard.CheckCheckpoint(bytes.NewReader(data)); !errors.Is(err, runtime.ErrCheckpointMismatch) {
		t.Errorf("another offset: %v", err)
	}
}

// TestPrivatizeTo writes what Privatize writes, into the caller's buffer.
func TestPrivatizeTo(t *testing.T) {
	const batch = 5
	o, ts := openPrivatizing(t, "fiber", runtime.CPU, batch)
	n := o.Len()
	cur, look := exampleRows(1, batch, n), exampleRows(2, batch, n)
	want, err := o.Privatize(cur, look)
	if err != nil {
		t.Fatal(err)
	}
	var wantG []float32
	for _, tn := range ts {
		g, _ := tn.Grad()
		wantG = append(wantG, g...)
	}
	out := make([]float32, n)
	got, err := o.PrivatizeTo(out, cur, look, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(out, wantG) || !sameBits(got.Scales, want.Scales) || got.Clipped != want.Clipped {
		t.Error("PrivatizeTo differs from Privatize")
	}
	scaled := make([]float32, n)
	o.IssueScales(want.Scales)
	if _, err := o.PrivatizeTo(scaled, cur, look, want.Scales); err != nil || !sameBits(scaled, out) {
		t.Errorf("PrivatizeTo with the scales given: %v, or other bits", err)
	}
	if _, err := o.PrivatizeTo(make([]float32, n+1), cur, look, nil); err == nil {
		t.Error("rows of another length were accepted")
	}
}

// TestUseBuffersErrors covers the misuses.
func TestUseBuffersErrors(t *testing.T) {
	theta, _ := inputs(0)
	o, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	nb := len(o.Manifest().Buffers)
	mk := func(n int) [][]float32 {
		b := make([][]float32, nb)
		for i := range b {
			b[i] = make([]float32, n)
		}
		return b
	}
	shared := mk(8)
	backing := make([]float32, 12)
	shared[2], shared[3] = backing[0:8], backing[2:10]
	uneven := mk(8)
	uneven[1] = uneven[1][:7]
	for _, c := range []struct {
		name string
		bufs [][]float32
		want string
	}{
		{"too few", mk(8)[:2], "2 buffers given"},
		{"overlap", shared, "overlap"},
		{"uneven", uneven, "holds 7 values"},
	} {
		if err := o.UseBuffers(c.bufs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := o.Register("w", theta[:4]); err != nil {
		t.Fatal(err)
	}
	if err := o.UseBuffers(mk(8)); err == nil {
		t.Error("UseBuffers after Register: accepted")
	}
	c, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{Backend: runtime.CUDA})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.UseBuffers(mk(8)); err == nil {
		t.Error("UseBuffers on CUDA: accepted")
	}
}

// TestLookaheadBuffer: theta before the first step, the look-ahead state
// after; -1 without a two_point observation.
func TestLookaheadBuffer(t *testing.T) {
	theta, grads := inputs(1)
	o, bufs := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	if b := o.LookaheadBuffer(); b != 0 {
		t.Errorf("before the first step: %d, want 0", b)
	}
	copy(bufs[1], grads[0])
	o.GradientWritten()      // the trainer wrote a clipped mean,
	o.TrustClippedGradient() // which it vouches for
	o.Step()
	if b := o.LookaheadBuffer(); o.Manifest().Buffers[b].Name != "lookahead" {
		t.Errorf("after a step: buffer %d", b)
	}
	s, err := runtime.Open(kernelDir(t, "dp_adamw"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b := s.LookaheadBuffer(); b != -1 {
		t.Errorf("dp_adamw: %d, want -1", b)
	}
}

// TestPrivatizeToKeepsTheGuard: privatizing into another buffer leaves the
// non-finite mark of the optimizer's own gradient, which Step still refuses.
func TestPrivatizeToKeepsTheGuard(t *testing.T) {
	o, ts := openPrivatizing(t, "dp_sgd", runtime.CPU, 2)
	for _, tn := range ts {
		g := make([]float32, tn.Len)
		g[0] = float32(math.NaN())
		if err := tn.SetGrad(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.TrustClippedGradient(); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, o.Len())
	if _, err := o.PrivatizeTo(out, exampleRows(1, 2, o.Len()), nil, nil); err != nil {
		t.Fatal(err)
	}
	var nf *runtime.NonFiniteError
	if err := o.CheckGradient(); !errors.As(err, &nf) {
		t.Errorf("CheckGradient after PrivatizeTo: %v, want the NaN of SetGrad", err)
	}
}

// TestUseBuffersAfterClose: the buffers may be given again after Close,
// which starts the backend anew at the next step.
func TestUseBuffersAfterClose(t *testing.T) {
	theta, grads := inputs(1)
	o, bufs := callerBuffers(t, runtime.CPU, theta, 0, len(theta))
	o.Close()
	if err := o.UseBuffers(bufs); err != nil {
		t.Fatal(err)
	}
	copy(bufs[1], grads[0])
	o.GradientWritten()      // the trainer wrote a clipped mean,
	o.TrustClippedGradient() // which it vouches for
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
}

func TestStepThreads(t *testing.T) {
	for _, c := range []struct {
		n, threads int
		host       bool
		want       int
	}{
		{0, 4, false, 1}, {1000, 1000, false, 1}, {4096, 2, false, 1}, {8192, 2, false, 2}, {20000, 1000, false, 5},
		{1 << 24, 2, false, 2}, {1 << 24, 0, false, 1},
		{10000, 2, true, 1}, {1 << 16, 2, true, 1}, {1 << 17, 2, true, 2}, {1<<18 + 4, 1000, true, 5}, {1 << 24, 2, true, 2},
	} {
		if got := runtime.StepThreads(c.n, c.threads, c.host); got != c.want {
			t.Errorf("StepThreads(%d, %d, %v) = %d, want %d", c.n, c.threads, c.host, got, c.want)
		}
	}
}

// TestHostStepSplitKeepsBits: the host kernel split over three threads
// (3·2^16 + 13 coordinates: pieces of 65540 and a tail of one) steps
// exactly as on one, noise included.
func TestHostStepSplitKeepsBits(t *testing.T) {
	n := 3<<16 + 13
	if got := runtime.StepThreads(n, 3, true); got != 4 {
		t.Fatalf("StepThreads(%d, 3, true) = %d, want 4: the test would not split as it says", n, got)
	}
	r := rand.New(rand.NewPCG(3, 4))
	theta, g := make([]float32, n), make([]float32, n)
	for i := range theta {
		theta[i], g[i] = float32(r.NormFloat64()), float32(0.1*r.NormFloat64())
	}
	var got [][]float32
	for _, threads := range []int{1, 3} {
		o, ts := openSized(t, kernelDir(t, "fiber"), runtime.Options{Threads: threads}, []int{n}, slices.Clone(theta))
		for range 2 {
			if err := stepAll(o, ts, g); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, flatParams(t, ts))
	}
	if !sameBits(got[0], got[1]) {
		t.Error("three threads stepped other bits than one")
	}
}
