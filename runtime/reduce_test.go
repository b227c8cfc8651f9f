package runtime_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/generated/lamb"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/tests/oracle"
)

// reduceSizes are the tensors of the reduction tests: several chunks with
// a partial one, a tensor of one coordinate, offsets inside Philox groups
// and secure octets.
var reduceSizes = []int{9001, 1, 7, 4096, 130}

// runReduced opens opt on backend over reduceSizes, gives the tensor c its
// own weight decay, and runs three steps of inputs' gradients under the
// options' noise (the secure scheme with a fixed key where asked); it
// returns the parameters. With privatized, the test draws the noise into
// the gradients itself (rng.Stream.Privatize, the stream the optimizer
// would draw) and the optimizer takes them as privatized.
func runReduced(t *testing.T, opt string, backend runtime.Backend, secure, privatized bool) []float32 {
	t.Helper()
	theta, grads := reduceInputs(3)
	return flatParams(t, stepReduced(t, kernelDir(t, opt), backend, secure, privatized, map[string]float64{"wd": 0}, theta, grads))
}

// stepReduced opens the optimizer of dir on backend over reduceSizes of
// theta, gives the tensor c the hypers own (nil: none), and steps on
// grads as runReduced does; where privatized, the test privatizes grads
// in place. It returns the tensors.
func stepReduced(t *testing.T, dir string, backend runtime.Backend, secure, privatized bool, own map[string]float64, theta []float32, grads [][]float32) []*runtime.Tensor {
	t.Helper()
	o := openDP(t, dir, simOptions(t, runtime.Options{Backend: backend, SecureNoise: secure}), testDP)
	stream := rng.Stream{Mode: rng.Philox, Seed: 2026}
	var err error
	if secure {
		stream = rng.Stream{Mode: rng.Secure, Key: testKey(3)}
		err = o.SetKey(stream.Key)
	} else {
		err = o.SetSeed(stream.Seed)
	}
	if err == nil && privatized {
		err = o.SetNoise(runtime.Noise{SigmaW2: testDP.SigmaW2()})
	}
	if err != nil {
		t.Fatal(err)
	}
	ts := registerSized(t, o, reduceSizes, theta)
	if own != nil {
		if err := ts[2].SetHypers(own); err != nil {
			t.Fatal(err)
		}
	}
	for step, g := range grads {
		if privatized {
			stream.Step = uint32(step)
			stream.Privatize(g, slices.Clone(g), rng.SigmaW(testDP.SigmaW2()), 0)
		}
		if err := stepAll(o, ts, g); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	return ts
}

// TestReduceExtremes: a per-tensor max and min (testdata/extremes.dsl)
// step bit for bit alike on the go, cpu and ptxsim backends in both noise
// schemes (min's term reads g, so the pass privatizes and keeps it), the
// states too (signed, a max of ±0 ties, has the sign the fold order
// gives), and
// each is its tensor's exact extreme, which no order of folding changes:
// after one step on gradients the test privatized itself, every
// coordinate of peak holds its tensor's max |θ| before the step, and of
// low its min of float32(g − θ).
func TestReduceExtremes(t *testing.T) {
	dir := testdataDir(t, "extremes")
	backends := []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim}
	for _, secure := range []bool{false, true} {
		var first []float32
		for _, b := range backends {
			got := runExtremes(t, dir, b, secure)
			if first == nil {
				first = got
			} else if d := floatbits.Diff(first, got); d != "" {
				t.Errorf("secure %v: %s against go: %s", secure, b, d)
			}
		}
	}
	for _, b := range backends {
		theta, grads := reduceInputs(1)
		theta0 := slices.Clone(theta)
		ts := stepReduced(t, dir, b, false, true, nil, theta, grads)
		for _, tn := range ts {
			th, g := theta0[tn.Offset:tn.Offset+tn.Len], grads[0][tn.Offset:tn.Offset+tn.Len]
			peak, low := float32(math.Inf(-1)), float32(math.Inf(1))
			for i := range th {
				peak, low = max(peak, float32(math.Abs(float64(th[i])))), min(low, g[i]-th[i])
			}
			checkFilled(t, b, tn, "peak", peak)
			checkFilled(t, b, tn, "low", low)
		}
	}
}

// runExtremes steps extremes (dir) on backend over three steps of
// reduceInputs and returns the parameters, then the states.
func runExtremes(t *testing.T, dir string, backend runtime.Backend, secure bool) []float32 {
	t.Helper()
	theta, grads := reduceInputs(3)
	ts := stepReduced(t, dir, backend, secure, false, nil, theta, grads)
	return slices.Concat(flatParams(t, ts), flatState(t, ts, "peak"), flatState(t, ts, "low"), flatState(t, ts, "signed"))
}

// checkFilled fails unless every coordinate of tn's state holds want.
func checkFilled(t *testing.T, b runtime.Backend, tn *runtime.Tensor, state string, want float32) {
	t.Helper()
	got, err := tn.State(state)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(got, func(x float32) bool { return math.Float32bits(x) != math.Float32bits(want) }); i >= 0 {
		t.Errorf("%s: tensor %s: %s[%d] = %v, want the tensor's extreme %v", b, tn.Name, state, i, got[i], want)
	}
}

// TestReduceKeptGradient: the step of an optimizer with reductions reads
// the gradient its reduction pass privatized (backend.Reduce's Keep), on
// every backend, in both schemes, and steps bit for bit as on gradients
// the test privatized itself with the stream the optimizer draws: the
// kept gradient is the privatized one at every coordinate of every tensor
// (offsets inside Philox groups and secure octets, partial rows).
func TestReduceKeptGradient(t *testing.T) {
	for _, secure := range []bool{false, true} {
		for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
			want := runReduced(t, "lamb", b, secure, true)
			if d := floatbits.Diff(want, runReduced(t, "lamb", b, secure, false)); d != "" {
				t.Errorf("lamb (secure %v) on %s: drawn in the pass against privatized by the test: %s", secure, b, d)
			}
		}
	}
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
				got := runReduced(t, opt, b, secure, false)
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

// TestReduceOracles holds lamb and lars without noise, on the go, cpu and
// ptxsim backends, to the float64 LAMB and LARS of tests/oracle over each
// tensor. The bound is float32's: each of the steps rounds θ (half an ulp
// of |θ| ≤ 2) and computes an update whose relative error is a few dozen
// roundings (norms over 9001 terms summed in chunks); a trust ratio over
// the whole buffer, or over the wrong tensor, moves θ by orders more.
func TestReduceOracles(t *testing.T) {
	const steps = 3
	theta, grads := reduceInputs(steps)
	for _, opt := range []string{"lamb", "lars"} {
		want, moved := reduceOracle(opt, theta, grads)
		bound := steps * (0x1p-23*2 + 0x1p-17*moved)
		for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
			got := runOracleCase(t, opt, b, theta, grads)
			for i := range got {
				if d := math.Abs(float64(got[i]) - want[i]); d > bound {
					t.Fatalf("%s on %s: theta[%d] = %v, the float64 oracle's %v (off by %.3g > %.3g)", opt, b, i, got[i], want[i], d, bound)
				}
			}
		}
	}
}

// runOracleCase steps opt on backend over reduceSizes, no noise, the
// default hypers everywhere, and returns the parameters.
func runOracleCase(t *testing.T, opt string, backend runtime.Backend, theta []float32, grads [][]float32) []float32 {
	t.Helper()
	o, ts := openSized(t, kernelDir(t, opt), simOptions(t, runtime.Options{Backend: backend}), reduceSizes, theta)
	if err := o.SetNoise(runtime.Noise{SigmaW2: 0}); err != nil {
		t.Fatal(err)
	}
	for step, g := range grads {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatalf("%s step %d: %v", backend, step, err)
		}
	}
	return flatParams(t, ts)
}

// reduceOracle runs the float64 oracle of opt at its .dsl's defaults on
// each tensor of reduceSizes; it returns θ and the most any coordinate
// moved.
func reduceOracle(opt string, theta32 []float32, grads [][]float32) (theta []float64, moved float64) {
	theta = widen(theta32)
	off := 0
	for _, s := range reduceSizes {
		step := oracle.NewLARS(oracle.LARSHypers{Lr: 0.1, Mu: 0.9, Wd: 5e-4, Eta: 1e-3}, s).Step
		if opt == "lamb" {
			step = oracle.NewLAMB(oracle.AdamW{Lr: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-6, Wd: 0.01}, s).Step
		}
		for _, g := range grads {
			step(theta[off:off+s], widen(g[off:off+s]))
		}
		off += s
	}
	for i, x := range theta {
		moved = max(moved, math.Abs(x-float64(theta32[i])))
	}
	return theta, moved
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
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

// TestCUDAReduce holds lamb, lars and testdata/extremes.dsl (a per-tensor
// max and min, ±0 ties among them) on a real GPU, Philox and secure, bit
// for bit to the go backend: the reduction kernel's partials, finished on
// the host, give the step the same scalars as the Go reference.
func TestCUDAReduce(t *testing.T) {
	needCUDA(t)
	for _, secure := range []bool{false, true} {
		for _, opt := range []string{"lamb", "lars"} {
			want := runReduced(t, opt, runtime.Go, secure, false)
			got := runReduced(t, opt, runtime.CUDA, secure, false)
			if d := floatbits.Diff(want, got); d != "" {
				t.Errorf("%s (secure %v): cuda against go: %s", opt, secure, d)
			}
		}
		dir := testdataDir(t, "extremes")
		if d := floatbits.Diff(runExtremes(t, dir, runtime.Go, secure), runExtremes(t, dir, runtime.CUDA, secure)); d != "" {
			t.Errorf("extremes (secure %v): cuda against go: %s", secure, d)
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
		want := runReduced(t, opt, runtime.Go, false, false)
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
