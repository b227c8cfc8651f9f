package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// TestTensorHypers: tensors with hypers of their own (weight decay off for
// b and d) step, noise included, exactly as an optimizer with those hypers
// everywhere steps their coordinates, the rest as the optimizer's own: the
// groups change which scalars a coordinate reads and nothing else. On the
// host backends and the PTX (on the simulator: one launch per group, on
// the buffers from the group's start).
func TestTensorHypers(t *testing.T) {
	const steps = 6
	theta, grads := inputs(steps)
	dir := kernelDir(t, "fiber")
	run := func(backend runtime.Backend, wd float64, overrides bool) [][]float32 {
		o, ts := openSized(t, dir, simOptions(t, runtime.Options{Backend: backend}), tensorSizes, theta)
		if err := o.SetHypers(map[string]float64{"wd": wd, "lr": 0.01}); err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{1, 3} {
			if err := ts[i].SetHypers(map[string]float64{"wd": 0}); overrides && err != nil {
				t.Fatal(err)
			}
		}
		for _, g := range grads {
			if err := stepAll(o, ts, g); err != nil {
				t.Fatal(err)
			}
		}
		return allBuffers(t, o, ts)
	}
	for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
		decayed, plain, grouped := run(b, 0.1, false), run(b, 0, false), run(b, 0.1, true)
		want := make([][]float32, len(decayed))
		for k := range decayed {
			want[k] = append([]float32(nil), decayed[k]...)
			off := 0
			for i, s := range tensorSizes {
				if i == 1 || i == 3 {
					copy(want[k][off:off+s], plain[k][off:off+s])
				}
				off += s
			}
		}
		if !sameBuffers(grouped, want) {
			t.Errorf("%s: the tensors with wd = 0 did not step as an optimizer with wd = 0 does", b)
		}
		if sameBuffers(decayed, plain) {
			t.Fatalf("%s: wd changes nothing, so the test cannot tell the groups apart", b)
		}
	}
}

// TestTensorHypersResume: a checkpoint carries the tensors' hypers, and
// the resumed run gives the uninterrupted one's bits.
func TestTensorHypersResume(t *testing.T) {
	const steps, at = 8, 3
	theta, grads := inputs(steps)
	dir := kernelDir(t, "fiber")
	open := func() (*runtime.Optimizer, []*runtime.Tensor) {
		o, ts := openSized(t, dir, runtime.Options{Backend: runtime.CPU}, tensorSizes, theta)
		if err := o.SetHyper("wd", 0.1); err != nil {
			t.Fatal(err)
		}
		return o, ts
	}
	ref, rts := open()
	a, ats := open()
	for _, tn := range []*runtime.Tensor{rts[2], ats[2]} {
		if err := tn.SetHypers(map[string]float64{"wd": 0, "beta1": 0.8}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range grads[:at] {
		if err := stepAll(ref, rts, g); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(a, ats, g); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "fiber.ckpt")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	b, bts := open()
	if err := b.Load(path); err != nil {
		t.Fatal(err)
	}
	if got := bts[2].Hypers(); got["wd"] != 0 || got["beta1"] != 0.8 || len(got) != 2 || bts[0].Hypers() != nil {
		t.Fatalf("loaded tensor hypers %v and %v", got, bts[0].Hypers())
	}
	for _, g := range grads[at:] {
		if err := stepAll(ref, rts, g); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(b, bts, g); err != nil {
			t.Fatal(err)
		}
	}
	if !sameBuffers(allBuffers(t, b, bts), allBuffers(t, ref, rts)) {
		t.Error("the resumed run differs from the uninterrupted one")
	}
}

// TestTensorHypersRefused: what a tensor's hypers cannot be, and that a
// refused setting changes nothing.
func TestTensorHypersRefused(t *testing.T) {
	theta, _ := inputs(0)
	_, fts := openSized(t, kernelDir(t, "fiber"), runtime.Options{}, tensorSizes, theta)
	doppler, dts := openSized(t, kernelDir(t, "doppler"), runtime.Options{}, tensorSizes, theta)
	if err := dts[0].SetHypers(map[string]float64{"a1": -1.2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown", fts[0].SetHypers(map[string]float64{"zeta": 1}), "fiber has no hyper zeta"},
		{"out of range", fts[0].SetHypers(map[string]float64{"beta1": 1}), "hyper beta1 = 1 is outside its range [0, 1)"},
		{"observation", fts[0].SetHypers(map[string]float64{"kappa": 0.5}), "hyper kappa shapes the observation, which is one for all tensors"},
		{"unstable", dts[1].SetHypers(map[string]float64{"a2": 0.99, "a1": -1.99}), "unstable"},
		{"base unstable for a tensor", doppler.SetHyper("a2", 0.15), "tensor a: "},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, c.err, c.want)
		}
	}
	if v, _ := doppler.Hyper("a2"); v != 0.25 {
		t.Errorf("a refused SetHyper changed a2 to %v", v)
	}
	if got := fts[1].Hypers(); got != nil {
		t.Errorf("refused overrides left %v", got)
	}
}

// TestSetTensorsHypers: SetTensorsHypers gives several tensors the same
// overrides in one check, each then holding what SetHypers would give it;
// refused — hypers out of range, a tensor of another optimizer — it
// changes none; and after the optimizer's hypers change, tensors that share
// overrides step with the hypers computed once for them all.
func TestSetTensorsHypers(t *testing.T) {
	theta, _ := inputs(0)
	dir := kernelDir(t, "fiber_cosine")
	o, ts := openSized(t, dir, runtime.Options{}, tensorSizes, theta)
	_, other := openSized(t, dir, runtime.Options{}, tensorSizes, theta)
	own := map[string]float64{"lr": 0.02}
	if err := o.SetTensorsHypers([]*runtime.Tensor{ts[0], ts[2]}, own); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ts   []*runtime.Tensor
		h    map[string]float64
		want string
	}{
		{"out of range", []*runtime.Tensor{ts[1], ts[0]}, map[string]float64{"beta1": 1}, "outside its range"},
		{"another optimizer's", []*runtime.Tensor{ts[1], other[0]}, own, "is not fiber_cosine's"},
	} {
		if err := o.SetTensorsHypers(nil, c.h); err != nil {
			t.Errorf("%s, for no tensors: %v", c.name, err)
		}
		if err := o.SetTensorsHypers(c.ts, c.h); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := o.SetHyper("lr", 0.5); err != nil { // lr_min follows each tensor's lr: recomputed
		t.Fatal(err)
	}
	single, sts := openSized(t, dir, runtime.Options{}, tensorSizes, theta)
	for _, i := range []int{0, 2} {
		if err := sts[i].SetHypers(own); err != nil {
			t.Fatal(err)
		}
	}
	if err := single.SetHyper("lr", 0.5); err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		if got, want := fmt.Sprint(ts[i].Hypers(), ts[i].HyperValues()), fmt.Sprint(sts[i].Hypers(), sts[i].HyperValues()); got != want {
			t.Errorf("tensor %s: %s, set one at a time %s", ts[i].Name, got, want)
		}
	}
}

// TestDerivedHypers: fiber_cosine's lr_min = lr / 100 follows lr until
// it is set itself, and a checkpoint remembers that it was.
func TestDerivedHypers(t *testing.T) {
	theta, _ := inputs(0)
	dir := kernelDir(t, "fiber_cosine")
	o, _ := openSized(t, dir, runtime.Options{}, tensorSizes, theta)
	lrMin := func(o *runtime.Optimizer) float64 {
		v, err := o.Hyper("lr_min")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := o.SetHyper("lr", 0.01); err != nil || lrMin(o) != 0.01/100 {
		t.Fatalf("after lr = 0.01: lr_min %v (%v), want 1e-4", lrMin(o), err)
	}
	if err := o.ApplySettings([]string{"lr_min=0.002", "lr=0.02"}); err != nil || lrMin(o) != 0.002 {
		t.Fatalf("after lr_min = 0.002: lr_min %v (%v)", lrMin(o), err)
	}
	path := filepath.Join(t.TempDir(), "c.ckpt")
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	b, _ := openSized(t, dir, runtime.Options{}, tensorSizes, theta)
	if err := b.Load(path); err != nil {
		t.Fatal(err)
	}
	if err := b.SetHyper("lr", 0.05); err != nil || lrMin(b) != 0.002 {
		t.Errorf("a loaded lr_min that was set followed lr: %v (%v)", lrMin(b), err)
	}
}

// TestTensorHypersDiagnostics: clamp_mass sums each hyper setting's
// partials: with a floor eps_v far above every v̂ on tensors b and d and
// none elsewhere, after one noiseless step (m̂ = g) it is the share of
// Σ|g| on b and d; every backend gives the same bits.
func TestTensorHypersDiagnostics(t *testing.T) {
	theta, grads := inputs(1)
	var want, all float64
	off := 0
	for i, s := range tensorSizes {
		for _, g := range grads[0][off : off+s] {
			all += math.Abs(float64(g))
			if i == 1 || i == 3 {
				want += math.Abs(float64(g))
			}
		}
		off += s
	}
	want /= all
	var first float64
	for k, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
		o, ts := openSized(t, kernelDir(t, "fiber"), simOptions(t, runtime.Options{Backend: b}), tensorSizes, theta)
		if err := errors.Join(o.SetNoise(runtime.Noise{}), o.SetHyper("eps_v", 0), o.EnableDiagnostics(),
			ts[1].SetHypers(map[string]float64{"eps_v": 1e6}), ts[3].SetHypers(map[string]float64{"eps_v": 1e6})); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(o, ts, grads[0]); err != nil {
			t.Fatal(err)
		}
		got, err := o.ClampMass()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-5*want {
			t.Errorf("%s: clamp_mass %v, want %v", b, got, want)
		}
		if k == 0 {
			first = got
		} else if got != first {
			t.Errorf("%s: clamp_mass %v, the Go backend's %v", b, got, first)
		}
	}
}
