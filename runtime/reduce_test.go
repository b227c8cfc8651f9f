package runtime_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/generated/lamb"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime"
)

// reduceSizes are the tensors of the reduction tests: several chunks with
// a partial one, a tensor of one coordinate, offsets inside Philox groups
// and secure octets.
var reduceSizes = []int{9001, 1, 7, 4096, 130}

// runReduced opens opt on backend over reduceSizes, gives the tensor c its
// own weight decay, and runs three steps of inputs' gradients under the
// options' noise (the secure scheme with a fixed key where asked); it
// returns the parameters.
func runReduced(t *testing.T, opt string, backend runtime.Backend, secure bool) []float32 {
	t.Helper()
	theta, grads := reduceInputs(3)
	o := openDP(t, kernelDir(t, opt), simOptions(t, runtime.Options{Backend: backend, SecureNoise: secure}), testDP)
	var err error
	if secure {
		err = o.SetKey(testKey(3))
	} else {
		err = o.SetSeed(2026)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ts []*runtime.Tensor
	off := 0
	for i, s := range reduceSizes {
		tn, err := o.Register(string(rune('a'+i)), theta[off:off+s])
		if err != nil {
			t.Fatal(err)
		}
		ts, off = append(ts, tn), off+s
	}
	if err := ts[2].SetHypers(map[string]float64{"wd": 0}); err != nil {
		t.Fatal(err)
	}
	for step, g := range grads {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	return flatParams(t, ts)
}

// reduceInputs are theta and the gradients of steps steps over reduceSizes.
func reduceInputs(steps int) (theta []float32, grads [][]float32) {
	n := 0
	for _, s := range reduceSizes {
		n += s
	}
	theta = make([]float32, n)
	for i := range theta {
		theta[i] = float32(math.Sin(float64(i)*0.37) + 0.1)
	}
	for s := range steps {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(0.01 * math.Cos(float64(i*(s+3))*0.11))
		}
		grads = append(grads, g)
	}
	return theta, grads
}

// TestReduceBackends checks that the optimizers with per-tensor reductions
// step bit for bit alike on the go, cpu and ptxsim backends, with Philox
// and with secure noise: the reduction pass privatizes g as the step does.
func TestReduceBackends(t *testing.T) {
	for _, opt := range []string{"lamb", "lars"} {
		for _, secure := range []bool{false, true} {
			var first []float32
			for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
				got := runReduced(t, opt, b, secure)
				if first == nil {
					first = got
					continue
				}
				if d := floatbits.Diff(first, got); d != "" {
					t.Errorf("%s (secure %v): %s against go: %s", opt, secure, b, d)
				}
			}
		}
	}
}

// TestReduceOracle holds lamb without noise, on the cpu backend, to a
// float64 LAMB over each tensor: a trust ratio over the whole buffer, or
// over the wrong tensor, moves the parameters by far more than the bound.
func TestReduceOracle(t *testing.T) {
	theta, grads := reduceInputs(3)
	o, ts := openSized(t, kernelDir(t, "lamb"), runtime.Options{Backend: runtime.CPU}, reduceSizes, theta)
	if err := o.SetNoise(runtime.Noise{SigmaW2: 0}); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(theta))
	off := 0
	for _, s := range reduceSizes {
		tensorGrads := make([][]float32, len(grads))
		for k, g := range grads {
			tensorGrads[k] = g[off : off+s]
		}
		copy(want[off:off+s], lambOracle(theta[off:off+s], tensorGrads))
		off += s
	}
	for step, g := range grads {
		for _, tn := range ts {
			if err := tn.SetGrad(g[tn.Offset : tn.Offset+tn.Len]); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Step(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	got := flatParams(t, ts)
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > 2e-6 {
			t.Fatalf("theta[%d] = %v, the float64 LAMB %v (off by %.3g)", i, got[i], want[i], d)
		}
	}
}

// lambOracle runs LAMB at lamb.dsl's defaults in float64 on one tensor.
func lambOracle(theta32 []float32, grads [][]float32) []float64 {
	const lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-6, 0.01
	n := len(theta32)
	theta, m, v, u := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, x := range theta32 {
		theta[i] = float64(x)
	}
	for t, g := range grads {
		var wn, un float64
		for i := range theta {
			gi := float64(g[i])
			m[i] = b1*m[i] + (1-b1)*gi
			v[i] = b2*v[i] + (1-b2)*gi*gi
			mh, vh := m[i]/(1-math.Pow(b1, float64(t+1))), v[i]/(1-math.Pow(b2, float64(t+1)))
			u[i] = mh/(math.Sqrt(vh)+eps) + wd*theta[i]
			wn, un = wn+theta[i]*theta[i], un+u[i]*u[i]
		}
		trust := 1.0
		if wn > 0 && un > 0 {
			trust = math.Sqrt(wn) / math.Sqrt(un)
		}
		for i := range theta {
			theta[i] -= lr * trust * u[i]
		}
	}
	return theta
}

// TestReduceGeneratedPackage holds the generated lamb package's Update
// (its Host.Reduce, then Scalars and Step, one tensor) to the runtime on
// that package and on the host kernel, bit for bit, under Philox noise.
func TestReduceGeneratedPackage(t *testing.T) {
	const seed, sigmaW2 = 77, 0.5
	theta, grads := reduceInputs(3)
	want := slices.Clone(theta)
	o, err := lamb.New(lamb.Defaults(), len(theta))
	if err != nil {
		t.Fatal(err)
	}
	o.Seed = seed
	for step, g := range grads {
		if err := o.Update(want, g, sigmaW2); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	open := map[string]func() (*runtime.Optimizer, error){
		"package": func() (*runtime.Optimizer, error) {
			return runtime.OpenPackage(runtime.Package{Manifest: lamb.Manifest(), Step: lamb.StepKernel}, runtime.Options{Threads: 2})
		},
		"cpu": func() (*runtime.Optimizer, error) {
			return runtime.Open(kernelDir(t, "lamb"), runtime.Options{Backend: runtime.CPU})
		},
	}
	for name, openIt := range open {
		r, tn := openOne(t, openIt, theta)
		if err := r.SetSeed(seed); err == nil {
			err = r.SetNoise(runtime.Noise{SigmaW2: sigmaW2, Draw: true})
		}
		if err != nil {
			t.Fatal(err)
		}
		for step, g := range grads {
			if err := tn.SetGrad(g); err != nil {
				t.Fatal(err)
			}
			if err := r.Step(); err != nil {
				t.Fatalf("%s: step %d: %v", name, step, err)
			}
		}
		if d := floatbits.Diff(want, params(t, tn)); d != "" {
			t.Errorf("%s against the generated package: %s", name, d)
		}
	}
}

// TestCUDAReduce holds lamb and lars on a real GPU, Philox and secure, bit
// for bit to the go backend: the reduction kernel's partials, summed on the
// host, give the step the same scalars as the Go reference.
func TestCUDAReduce(t *testing.T) {
	needCUDA(t)
	for _, opt := range []string{"lamb", "lars"} {
		for _, secure := range []bool{false, true} {
			want := runReduced(t, opt, runtime.Go, secure)
			got := runReduced(t, opt, runtime.CUDA, secure)
			if d := floatbits.Diff(want, got); d != "" {
				t.Errorf("%s (secure %v): cuda against go: %s", opt, secure, d)
			}
		}
	}
}

// TestCUDAStepDeviceReduce steps lamb and lars as the PyTorch binding does
// on a GPU, each tensor a range of device buffers of the trainer's
// (RegisterRange, StepDevice), bit for bit as the Go backend steps the
// same tensors registered with values of their own.
func TestCUDAStepDeviceReduce(t *testing.T) {
	ctx := cudaContext(t)
	theta, grads := reduceInputs(3)
	for _, opt := range []string{"lamb", "lars"} {
		want := runReduced(t, opt, runtime.Go, false)
		o, err := runtime.Open(ptxDir(t, opt), runtime.Options{Backend: runtime.CUDA})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		var ts []*runtime.Tensor
		for i, s := range reduceSizes {
			tn, err := o.RegisterRange(string(rune('a'+i)), s)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, tn)
		}
		if err := errors.Join(ts[2].SetHypers(map[string]float64{"wd": 0}), o.SetDP(testDP), o.SetSeed(2026)); err != nil {
			t.Fatal(err)
		}
		n := len(theta)
		a := newDeviceArena(t, ctx, len(o.Manifest().Buffers), n, 1)
		a.put(t, ir.ThetaBuffer, theta)
		if err := o.InitDeviceStates(a.bufs, n); err != nil {
			t.Fatal(err)
		}
		for _, g := range grads {
			a.put(t, ir.GradBuffer, g)
			if err := errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.StepDevice(a.bufs, n, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if d := floatbits.Diff(want, a.get(t, ir.ThetaBuffer)); d != "" {
			t.Errorf("%s: StepDevice over ranges against the go backend: %s", opt, d)
		}
	}
}
