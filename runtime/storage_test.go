package runtime_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// storageStates are the states of testdata/storage.dsl and
// testdata/storage_passes.dsl, by optimizer, with their storage types.
var storageStates = map[string]map[string]lang.DType{
	"storage":        {"m": lang.BFloat16, "v": lang.BFloat16, "s": lang.BFloat16, "c": lang.Float32, "h": lang.Float16, "q": lang.Float16},
	"storage_passes": {"m": lang.BFloat16, "v": lang.Float16},
}

// paramStorages are the parameter storages the storage tests compile
// testdata/storage.dsl and storage_passes.dsl for: float32, bfloat16 to
// nearest and float16 stochastically.
var paramStorages = []ir.Storage{{DType: lang.Float32}, {DType: lang.BFloat16}, {DType: lang.Float16, Stochastic: true}}

// TestStorageBackends: optimizers with bfloat16 and float16 states
// (testdata/storage.dsl; storage_passes.dsl, whose reductions read them),
// compiled for float32, bfloat16 and float16 parameters, step bit for bit
// alike on the go, cpu and ptxsim backends in both noise schemes, over
// tensors at odd offsets, and every state and parameter holds values of its
// type only.
func TestStorageBackends(t *testing.T) {
	for name, states := range storageStates {
		for _, params := range paramStorages {
			dir := testdataDirFor(t, name, params)
			for _, secure := range []bool{false, true} {
				var first []float32
				for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
					theta, grads := reduceInputs(3)
					ts := stepReduced(t, dir, b, secure, false, nil, theta, grads)
					got := flatParams(t, ts)
					checkStored(t, name, ir.ThetaName, params.DType, got)
					for _, s := range slices.Sorted(maps.Keys(states)) {
						vals := flatState(t, ts, s)
						checkStored(t, name, s, states[s], vals)
						got = append(got, vals...)
					}
					if first == nil {
						first = got
					} else if d := floatbits.Diff(first, got); d != "" {
						t.Errorf("%s, parameters %v, secure %v: %s against go: %s", name, params, secure, b, d)
					}
				}
			}
		}
	}
}

// checkStored fails unless every value of state s is one its type d holds.
func checkStored(t *testing.T, opt, s string, d lang.DType, vals []float32) {
	t.Helper()
	if d == "" || d == lang.Float32 {
		return
	}
	for i, x := range vals {
		if y := rng.Widen(d, rng.Bits(d, x)); y != x && x == x {
			t.Fatalf("%s: state %s[%d] = %v, which a %s does not hold", opt, s, i, x, d.Name())
		}
	}
}

// TestStorageCheckpoint: a checkpoint of an optimizer with 16-bit states
// restores them bit for bit, on the backend that saved it and on another,
// so that the steps after a load are those of the run that saved it.
func TestStorageCheckpoint(t *testing.T) {
	dir := testdataDir(t, "storage")
	theta, grads := reduceInputs(4)
	run := func(b runtime.Backend, load []byte) ([]float32, []byte) {
		o := openDP(t, dir, simOptions(t, runtime.Options{Backend: b, AllowResumeAgain: true}), testDP) // one checkpoint, resumed on each backend
		if err := o.SetSeed(7); err != nil {
			t.Fatal(err)
		}
		ts := registerSized(t, o, reduceSizes, slices.Clone(theta))
		var saved []byte
		steps := grads
		if load != nil {
			if err := o.LoadFrom(bytes.NewReader(load)); err != nil {
				t.Fatal(err)
			}
			steps = grads[2:]
		}
		for i, g := range steps {
			if load == nil && i == 2 {
				var buf bytes.Buffer
				if err := o.SaveTo(&buf); err != nil {
					t.Fatal(err)
				}
				saved = buf.Bytes()
			}
			if err := stepAll(o, ts, g); err != nil {
				t.Fatal(err)
			}
		}
		return slices.Concat(flatParams(t, ts), flatState(t, ts, "m"), flatState(t, ts, "h"), flatState(t, ts, "q")), saved
	}
	want, saved := run(runtime.CPU, nil)
	for _, b := range []runtime.Backend{runtime.CPU, runtime.Go, runtime.PTXSim} {
		if got, _ := run(b, saved); !slices.Equal(floatBits(got), floatBits(want)) {
			t.Errorf("%s after a load: %s", b, floatbits.Diff(want, got))
		}
	}
}

func floatBits(xs []float32) []uint32 {
	out := make([]uint32, len(xs))
	for i, x := range xs {
		out[i] = math.Float32bits(x)
	}
	return out
}

// TestStorageTrainerMemory: UseBuffers' float32 memory for a 16-bit state
// is refused by name, and nothing is changed (UseHostBuffers takes its
// 16-bit memory; python/tests/test_storage.py steps it).
func TestStorageTrainerMemory(t *testing.T) {
	dir := testdataDir(t, "storage")
	o, err := runtime.Open(dir, runtime.Options{Backend: runtime.CPU})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	bufs := make([][]float32, 8)
	for i := range bufs {
		bufs[i] = make([]float32, 5)
	}
	err = o.UseBuffers(bufs)
	want := "runtime: UseBuffers: buffer m is float32 memory; storage stores it as bfloat16"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("UseBuffers: %v, want %q…", err, want)
	}
	if _, err := o.Register("w", make([]float32, 3)); err != nil {
		t.Errorf("the refusal changed the optimizer: Register: %v", err)
	}
}

// TestCUDAStepDeviceStorage steps testdata/storage.dsl, for float32,
// bfloat16 and float16 parameters, on device buffers the test allocates as
// a trainer would, its 16-bit states and parameters as 16-bit memory, over
// ranges at odd offsets — one of them (at 9009) with hypers of its own,
// whose states InitDeviceStates fills from an odd value — and compares
// theta and the states with the go backend's run on buffers of its own.
func TestCUDAStepDeviceStorage(t *testing.T) {
	ctx := cudaContext(t)
	for _, params := range paramStorages {
		t.Run(fmt.Sprintf("params=%v", params), func(t *testing.T) { checkStepDeviceStorage(t, ctx, params) })
	}
}

func checkStepDeviceStorage(t *testing.T, ctx *cudadrv.Context, params ir.Storage) {
	dir := testdataDirFor(t, "storage", params)
	theta, grads := reduceInputs(3)
	own := map[string]float64{"beta1": 0.8}
	ts := stepStorage(t, dir, own, slices.Clone(theta), grads)
	o, err := runtime.Open(dir, runtime.Options{Backend: runtime.CUDA})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var ranges []*runtime.Tensor
	for i, s := range reduceSizes {
		tn, err := o.RegisterRange(string(rune('a'+i)), s)
		if err != nil {
			t.Fatal(err)
		}
		ranges = append(ranges, tn)
	}
	if err := errors.Join(ranges[3].SetHypers(own), o.SetDP(testDP), o.SetSeed(2026)); err != nil {
		t.Fatal(err)
	}
	n, bufs := len(theta), o.Manifest().Buffers
	dtype := func(i int) lang.DType { d, _ := lang.DTypeNamed(bufs[i].DType); return d }
	a := newDeviceArena(t, ctx, len(bufs), n, 1)
	a.putStored(t, ir.ThetaBuffer, dtype(ir.ThetaBuffer), theta)
	if err := o.InitDeviceStates(a.bufs, n); err != nil {
		t.Fatal(err)
	}
	for _, g := range grads {
		a.put(t, ir.GradBuffer, g)
		if err := errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.StepDevice(a.bufs, n, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if d := floatbits.Diff(flatParams(t, ts), a.getStored(t, ir.ThetaBuffer, dtype(ir.ThetaBuffer))); d != "" {
		t.Errorf("theta: StepDevice against the go backend: %s", d)
	}
	for i, b := range bufs[ir.FirstState:] {
		if d := floatbits.Diff(flatState(t, ts, b.Name), a.getStored(t, ir.FirstState+i, dtype(ir.FirstState+i))); d != "" {
			t.Errorf("state %s: StepDevice against the go backend: %s", b.Name, d)
		}
	}
}

// stepStorage steps testdata/storage.dsl (dir) on the go backend over
// reduceSizes, tensor 3 (at 9009) with the hypers own, as
// TestCUDAStepDeviceStorage steps the device.
func stepStorage(t *testing.T, dir string, own map[string]float64, theta []float32, grads [][]float32) []*runtime.Tensor {
	o := openDP(t, dir, runtime.Options{Backend: runtime.Go}, testDP)
	if err := o.SetSeed(2026); err != nil {
		t.Fatal(err)
	}
	ts := registerSized(t, o, reduceSizes, theta)
	if err := ts[3].SetHypers(own); err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return ts
}

// TestStochasticParams: an update smaller than half a bfloat16 unit in the
// last place — dp_sgd's lr·g = 10⁻³ at θ = 1, where half a unit is 2⁻⁹ —
// never moves a parameter stored to nearest, and moves one stored
// stochastically in expectation: after 100 steps the mean over 2^14
// coordinates is float32's 0.9 within 4 standard errors, on every backend.
func TestStochasticParams(t *testing.T) {
	const n, steps = 1 << 14, 100
	for _, params := range []ir.Storage{{DType: lang.BFloat16}, {DType: lang.BFloat16, Stochastic: true}} {
		dir := builtDirFor(t, "../optimizers/dp_sgd.dsl", params)
		for _, b := range []runtime.Backend{runtime.Go, runtime.CPU} {
			o, err := runtime.Open(dir, runtime.Options{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.SetSeed(7); err == nil {
				err = o.SetNoise(runtime.Noise{})
			}
			if err != nil {
				t.Fatal(err)
			}
			tn, err := o.Register("w", slices.Repeat([]float32{1}, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := tn.SetHypers(map[string]float64{"lr": 1e-3}); err != nil {
				t.Fatal(err)
			}
			for range steps {
				if err := tn.SetGrad(slices.Repeat([]float32{1}, n)); err == nil {
					err = o.Step()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			theta, err := tn.Params()
			if err != nil {
				t.Fatal(err)
			}
			checkStored(t, "dp_sgd", ir.ThetaName, lang.BFloat16, theta)
			mean := 0.0
			for _, x := range theta {
				mean += float64(x) / n
			}
			// A stochastic store's error is at most one unit (2^-8 below 1), mean zero, independent between steps.
			tol := 4 * math.Sqrt(steps) * 0x1p-8 / math.Sqrt(n)
			switch {
			case !params.Stochastic && mean != 1:
				t.Errorf("%s, to nearest: mean %v, want 1 (every update below half a unit)", b, mean)
			case params.Stochastic && math.Abs(mean-0.9) > tol:
				t.Errorf("%s, stochastic: mean %v, want 0.9 ± %.2g", b, mean, tol)
			}
		}
	}
}
