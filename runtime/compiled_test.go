package runtime_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// compiledFiber is fiber as OpenCompiled takes it: the manifest's bytes and
// the shared object of kernelDir.
func compiledFiber(t *testing.T) runtime.Compiled {
	t.Helper()
	dir := kernelDir(t, "fiber")
	m, err := os.ReadFile(filepath.Join(dir, "fiber.json"))
	if err != nil {
		t.Fatal(err)
	}
	return runtime.Compiled{Manifest: m, SharedObject: filepath.Join(dir, "fiber.so")}
}

// openOne opens an optimizer with open and registers theta as one tensor.
func openOne(t *testing.T, open func() (*runtime.Optimizer, error), theta []float32) (*runtime.Optimizer, *runtime.Tensor) {
	t.Helper()
	o, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	tn, err := o.Register("theta", slices.Clone(theta))
	if err == nil {
		err = o.SetSeed(2026)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o, tn
}

// TestOpenCompiledMatchesOpen steps fiber opened from memory (the manifest's
// bytes, the shared object's path) and from its directory: the same bits,
// on the host kernel and, with no kernel given, on the reference.
func TestOpenCompiledMatchesOpen(t *testing.T) {
	theta, grads := inputs(4)
	c := compiledFiber(t)
	for _, tc := range []struct {
		backend runtime.Backend
		c       runtime.Compiled
	}{{runtime.CPU, c}, {runtime.Go, runtime.Compiled{Manifest: c.Manifest}}} {
		opts := runtime.Options{Backend: tc.backend}
		mem, mt := openOne(t, func() (*runtime.Optimizer, error) { return runtime.OpenCompiled(tc.c, opts) }, theta)
		dir, dt := openOne(t, func() (*runtime.Optimizer, error) { return runtime.Open(kernelDir(t, "fiber"), opts) }, theta)
		for _, g := range grads {
			for _, x := range []struct {
				o  *runtime.Optimizer
				tn *runtime.Tensor
			}{{mem, mt}, {dir, dt}} {
				if err := errors.Join(x.o.SetDP(testDP), x.tn.SetGrad(g), x.o.TrustClippedGradient(), x.o.Step()); err != nil {
					t.Fatal(err)
				}
			}
		}
		a, _ := mt.Params()
		b, _ := dt.Params()
		if !sameBits(a, b) || mem.Backend() != tc.backend {
			t.Errorf("%s: OpenCompiled (backend %s) and Open differ", tc.backend, mem.Backend())
		}
	}
	if _, err := runtime.OpenCompiled(runtime.Compiled{Manifest: []byte("{}")}, runtime.Options{}); err == nil {
		t.Error("OpenCompiled of a manifest of no format succeeded")
	}
}

// TestNoSilentFallback checks that the CPU backend without a host kernel is
// an error at Open, naming the way out, unless the caller asks for the
// reference.
func TestNoSilentFallback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fiber")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(kernelDir(t, "fiber"), "fiber.json"), filepath.Join(dir, "fiber.json"))
	m := compiledFiber(t).Manifest
	for _, open := range []func(runtime.Options) (*runtime.Optimizer, error){
		func(opts runtime.Options) (*runtime.Optimizer, error) { return runtime.Open(dir, opts) },
		func(opts runtime.Options) (*runtime.Optimizer, error) {
			return runtime.OpenCompiled(runtime.Compiled{Manifest: m}, opts)
		},
	} {
		if _, err := open(runtime.Options{}); err == nil || !strings.Contains(err.Error(), "no host kernel fiber.so") || !strings.Contains(err.Error(), "GoFallback") {
			t.Errorf("CPU without fiber.so: %v", err)
		}
		o, tn := openOne(t, func() (*runtime.Optimizer, error) { return open(runtime.Options{GoFallback: true}) }, []float32{1, 2})
		if err := errors.Join(o.SetDP(testDP), tn.SetGrad([]float32{0.1, 0.2}), o.TrustClippedGradient(), o.Step()); err != nil || o.Backend() != runtime.Go {
			t.Errorf("GoFallback: backend %s, %v", o.Backend(), err)
		}
	}
}

// TestSetNoise checks the noise given directly against the reference
// (interp.Engine.Run) bit for bit, drawn and not, on every backend the
// machine runs, through a checkpoint taken half way.
func TestSetNoise(t *testing.T) {
	const sigmaW2 = 0.04
	theta, grads := inputs(6)
	p := programOf(t, compiledFiber(t).Manifest)
	for _, draw := range []bool{true, false} {
		want := slices.Clone(theta)
		ref := interp.Engine{P: p, Hypers: p.Func.DefaultHypers(), Noise: draw, Seed: 2026}
		if _, err := ref.Run(want, slices.Concat(grads...), sigmaW2); err != nil {
			t.Fatal(err)
		}
		for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
			got := stepNoise(t, backend, runtime.Noise{SigmaW2: sigmaW2, Draw: draw}, theta, grads)
			if !sameBits(got, want) {
				t.Errorf("%s, draw %v: θ differs from the reference's", backend, draw)
			}
		}
	}
}

// stepNoise runs the steps of grads with the noise nz, saving a checkpoint
// half way and going on in a fresh optimizer loaded from it.
func stepNoise(t *testing.T, backend runtime.Backend, nz runtime.Noise, theta []float32, grads [][]float32) []float32 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ckpt")
	open := func() (*runtime.Optimizer, error) { // every backend resumes the same bytes
		return runtime.Open(kernelDir(t, "fiber"), runtime.Options{Backend: backend, AllowResumeAgain: true})
	}
	o, tn := openOne(t, open, theta)
	for i, g := range grads {
		if i == len(grads)/2 {
			if err := o.Save(path); err != nil {
				t.Fatal(err)
			}
			o, tn = openOne(t, open, make([]float32, len(theta)))
			if err := o.Load(path); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			if err := o.SetNoise(nz); err != nil {
				t.Fatal(err)
			}
		}
		if err := errors.Join(tn.SetGrad(g), o.Step()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tn.Params()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSetNoiseErrors checks what SetNoise refuses.
func TestSetNoiseErrors(t *testing.T) {
	o, _ := openOne(t, func() (*runtime.Optimizer, error) { return runtime.OpenCompiled(compiledFiber(t), runtime.Options{}) }, []float32{1})
	for _, x := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := o.SetNoise(runtime.Noise{SigmaW2: x}); err == nil {
			t.Errorf("SetNoise(σ_w² = %v) succeeded", x)
		}
	}
	b := runtime.Budget{Epsilon: 1, ClipNorm: 1, Schedule: privacy.Schedule{DatasetSize: 1000, BatchSize: 10, Epochs: 1}}
	if _, err := o.SetBudget(b); err != nil {
		t.Fatal(err)
	}
	if err := o.SetNoise(runtime.Noise{SigmaW2: 1, Draw: true}); err == nil || !strings.Contains(err.Error(), "SetBudget") {
		t.Errorf("SetNoise under a budget: %v", err)
	}
}

// TestNoiseCheckpointUnderBudget checks that a checkpoint of noise given
// directly does not load where a budget sets the noise, nor over other DP
// settings made before the load, and that it sets the noise elsewhere.
func TestNoiseCheckpointUnderBudget(t *testing.T) {
	open := func() (*runtime.Optimizer, error) { return runtime.OpenCompiled(compiledFiber(t), runtime.Options{}) }
	a, ta := openOne(t, open, []float32{1, 2})
	path := filepath.Join(t.TempDir(), "ckpt")
	if err := errors.Join(a.SetNoise(runtime.Noise{SigmaW2: 0.5}), ta.SetGrad([]float32{0.1, 0.2}), a.Step(), a.Save(path)); err != nil {
		t.Fatal(err)
	}
	b, _ := openOne(t, open, []float32{0, 0})
	budget := runtime.Budget{Epsilon: 1, ClipNorm: 1, Schedule: privacy.Schedule{DatasetSize: 1000, BatchSize: 10, Epochs: 1}}
	if _, err := b.SetBudget(budget); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(path); !errors.Is(err, runtime.ErrCheckpointMismatch) {
		t.Errorf("Load of a SetNoise checkpoint under a budget: %v, want ErrCheckpointMismatch", err)
	}
	c, _ := openOne(t, open, []float32{0, 0})
	if err := c.SetDP(testDP); err != nil {
		t.Fatal(err)
	}
	if err := c.Load(path); !errors.Is(err, runtime.ErrCheckpointMismatch) || !strings.Contains(err.Error(), "σ_w² = 0.5") {
		t.Errorf("Load of a SetNoise checkpoint over DP settings: %v, want ErrCheckpointMismatch naming both", err)
	}
	d, _ := openOne(t, open, []float32{0, 0})
	if err := d.Load(path); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Privatize([]float32{1, 1}, nil); err == nil || !strings.Contains(err.Error(), "SetDP") {
		t.Errorf("Privatize after loading noise: %v, want no DP settings", err)
	}
}

// TestApplySettings sets hypers from "name=value" strings, in order; an
// error wraps the setting's own message and changes nothing.
func TestApplySettings(t *testing.T) {
	o, _ := openOne(t, func() (*runtime.Optimizer, error) { return runtime.OpenCompiled(compiledFiber(t), runtime.Options{}) }, []float32{1})
	if err := o.ApplySettings([]string{"omega=0.5", "lr = 0.01", "omega=0.25"}); err != nil {
		t.Fatal(err)
	}
	if w, _ := o.Hyper("omega"); w != 0.25 {
		t.Errorf("omega = %v after the settings, want 0.25 (the last)", w)
	}
	for _, c := range []struct{ set, want string }{
		{"nope=1", "fiber has no hyper nope (its hypers: lr, beta1"},
		{"omega=2", "hyper omega = 2 is outside its range (0, 1]"},
		{"omega", "malformed setting \"omega\""},
	} {
		err := o.ApplySettings([]string{"lr=0.5", c.set})
		if err == nil || !strings.HasPrefix(errors.Unwrap(err).Error(), c.want) {
			t.Errorf("ApplySettings(%s): %v, want it to wrap %q", c.set, err, c.want)
		}
	}
	if lr, _ := o.Hyper("lr"); lr != 0.01 {
		t.Errorf("lr = %v after failed settings, want 0.01", lr)
	}
}
