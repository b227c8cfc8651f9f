package runtime_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/internal/floatbits"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/generated/fiber"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/runtime"
)

// kernelDirs caches, per optimizer, a directory laid out as fibergen build
// lays out generated/<name>/: the checked-in manifest and a shared object
// built from the checked-in module (generated/ holds none in a clean clone).
// $FIBERGEN_GENERATED names a fibergen build output to use instead, for a
// GPU host without LLVM (scripts/gpu-check.sh points it at the bundle's).
var kernelDirs sync.Map

func kernelDir(t testing.TB, name string) string {
	t.Helper()
	if dir, ok := kernelDirs.Load(name); ok {
		return dir.(string)
	}
	if built := os.Getenv("FIBERGEN_GENERATED"); built != "" {
		return filepath.Join(built, name)
	}
	dir := filepath.Join(kernelRoot, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "generated", name, name)
	copyFile(t, src+".json", filepath.Join(dir, name+".json"))
	copyFile(t, src+".ptx", filepath.Join(dir, name+".ptx"))
	ll, err := os.ReadFile(src + ".ll")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := manifest.Read(src + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.SharedObject(string(ll), m.Kernels.HostFunction, filepath.Join(dir, name+".so")); err != nil {
		t.Fatal(err)
	}
	kernelDirs.Store(name, dir)
	return dir
}

// kernelRoot holds the kernel directories of one test binary; TestMain
// removes it.
var kernelRoot string

func TestMain(m *testing.M) {
	if os.Getenv("FIBERGEN_CUDA_SIM") == "1" {
		// The CUDA backend's tests on the PTX simulator (make test runs them
		// so): cudadrv.Load returns its driver.
		if _, err := cudasim.Install(); err != nil {
			panic(err)
		}
	}
	var err error
	if kernelRoot, err = os.MkdirTemp("", "fibergen-runtime-test-"); err != nil {
		panic(err)
	}
	// The resume record of this test binary's own, not the user's (a child
	// of TestResumeOnceAcrossProcesses shares its parent's).
	if os.Getenv("FIBERGEN_TEST_RESUME") == "" {
		os.Setenv("FIBERGEN_STATE_DIR", filepath.Join(kernelRoot, "state"))
	}
	code := m.Run()
	os.RemoveAll(kernelRoot)
	os.Exit(code)
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// simOptions wires the PTX simulator into opts for Backend PTXSim, as
// cmd/fibergen does: a new simulated device per optimizer (the runtime does
// not link the simulator; Options.Driver injects it).
func simOptions(t testing.TB, opts runtime.Options) runtime.Options {
	t.Helper()
	if opts.Backend == runtime.PTXSim {
		_, drv, err := cudasim.New(cudasim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		opts.Driver = drv
	}
	return opts
}

var testDP = runtime.DP{ClipNorm: 1, NoiseMultiplier: 1.1, BatchSize: 64}

// tensorSizes are the registered tensors: awkward sizes, so tensors start
// inside Philox groups and at unaligned offsets.
var tensorSizes = []int{7, 1, 4099, 3, 1024}

func inputs(steps int) (theta []float32, grads [][]float32) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, s := range tensorSizes {
		n += s
	}
	theta = make([]float32, n)
	for i := range theta {
		theta[i] = float32(r.NormFloat64())
	}
	for range steps {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(0.1 * r.NormFloat64())
		}
		grads = append(grads, g)
	}
	return theta, grads
}

// openDP opens the optimizer in dir with the DP settings dp, closed when
// the test ends.
func openDP(t testing.TB, dir string, opts runtime.Options, dp runtime.DP) *runtime.Optimizer {
	t.Helper()
	o, err := runtime.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	if err := o.SetDP(dp); err != nil {
		t.Fatal(err)
	}
	return o
}

// openFiber opens fiber with the tensors of tensorSizes registered from theta.
func openFiber(t *testing.T, opts runtime.Options, theta []float32) (*runtime.Optimizer, []*runtime.Tensor) {
	t.Helper()
	return openSized(t, kernelDir(t, "fiber"), opts, tensorSizes, theta)
}

// openSized opens the optimizer name from dir with tensors of the given
// sizes registered from theta, the DP settings testDP and the seed 2026.
func openSized(t *testing.T, dir string, opts runtime.Options, sizes []int, theta []float32) (*runtime.Optimizer, []*runtime.Tensor) {
	t.Helper()
	o := openDP(t, dir, opts, testDP)
	if err := o.SetSeed(2026); err != nil {
		t.Fatal(err)
	}
	return o, registerSized(t, o, sizes, theta)
}

// registerSized registers theta as tensors a, b, … of the given sizes.
func registerSized(t *testing.T, o *runtime.Optimizer, sizes []int, theta []float32) []*runtime.Tensor {
	t.Helper()
	var ts []*runtime.Tensor
	off := 0
	for i, s := range sizes {
		tn, err := o.Register(string(rune('a'+i)), theta[off:off+s])
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tn)
		off += s
	}
	return ts
}

// stepAll sets every tensor's gradient from the flat g — a clipped mean,
// as the trainer vouches (TrustClippedGradient) — and steps.
func stepAll(o *runtime.Optimizer, ts []*runtime.Tensor, g []float32) error {
	for _, tn := range ts {
		if err := tn.SetGrad(g[tn.Offset : tn.Offset+tn.Len]); err != nil {
			return err
		}
	}
	if err := o.TrustClippedGradient(); err != nil {
		return err
	}
	return o.Step()
}

// flatParams concatenates the tensors' parameters.
func flatParams(t *testing.T, ts []*runtime.Tensor) []float32 {
	t.Helper()
	var out []float32
	for _, tn := range ts {
		p, err := tn.Params()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p...)
	}
	return out
}

// TestOptimizerMatchesGenerated runs fiber through the runtime — the host
// kernel and the reference, on one and on several threads — and through the
// generated package, from the same seed: the parameters and states agree bit
// for bit after every step.
func TestOptimizerMatchesGenerated(t *testing.T) {
	const steps = 6
	theta, grads := inputs(steps)
	ref, err := fiber.New(fiber.Defaults(), len(theta))
	if err != nil {
		t.Fatal(err)
	}
	ref.Seed = 2026
	want := slices.Clone(theta)
	var wantAfter [][]float32
	for _, g := range grads {
		if err := ref.Update(want, g, testDP.SigmaW2()); err != nil {
			t.Fatal(err)
		}
		wantAfter = append(wantAfter, slices.Clone(want))
	}
	for _, c := range []struct {
		backend runtime.Backend
		threads int
	}{{runtime.CPU, 1}, {runtime.CPU, 3}, {runtime.Go, 1}, {runtime.Go, 2}} {
		o, ts := openFiber(t, runtime.Options{Backend: c.backend, Threads: c.threads}, theta)
		for s, g := range grads {
			if err := stepAll(o, ts, g); err != nil {
				t.Fatal(err)
			}
			if got := flatParams(t, ts); !sameBits(got, wantAfter[s]) {
				t.Fatalf("%s/%d threads, step %d: parameters differ from the generated package", c.backend, c.threads, s)
			}
		}
		if o.Backend() != c.backend || o.Steps() != steps {
			t.Errorf("backend %s after %d steps, want %s after %d", o.Backend(), o.Steps(), c.backend, steps)
		}
		v, _ := ts[2].State("v")
		if !sameBits(v, ref.V[ts[2].Offset:ts[2].Offset+ts[2].Len]) {
			t.Errorf("%s: state v differs", c.backend)
		}
	}
}

// sameBits is the project's bit comparison, floatbits.Equal.
func sameBits(a, b []float32) bool { return floatbits.Equal(a, b) }

// TestNonFiniteGradient plants a NaN and an Inf: the step reports the first,
// changes nothing, and the next good step is the step an optimizer that
// never saw the bad gradient takes.
func TestNonFiniteGradient(t *testing.T) {
	theta, grads := inputs(2)
	o, ts := openFiber(t, runtime.Options{}, theta)
	clean, cts := openFiber(t, runtime.Options{}, theta)
	bad := slices.Clone(grads[0])
	bad[ts[2].Offset+17] = float32(math.NaN())
	bad[ts[4].Offset+3] = float32(math.Inf(-1))
	before := flatParams(t, ts)
	err := stepAll(o, ts, bad)
	var nf *runtime.NonFiniteError
	if !errors.As(err, &nf) || nf.Tensor != "c" || nf.Index != 17 {
		t.Fatalf("got %v, want a NonFiniteError at c[17]", err)
	}
	if o.Steps() != 0 || !sameBits(flatParams(t, ts), before) {
		t.Fatal("the skipped step changed the step counter or the parameters")
	}
	for _, g := range grads {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(clean, cts, g); err != nil {
			t.Fatal(err)
		}
	}
	if !sameBits(flatParams(t, ts), flatParams(t, cts)) {
		t.Error("after a skipped step the trajectory differs from one that never saw it")
	}
}

// TestShards splits the flat vector into shards, each its own optimizer
// with its global offset: together they compute the bits of one optimizer
// over the whole vector.
func TestShards(t *testing.T) {
	theta, grads := inputs(3)
	whole, wts := openFiber(t, runtime.Options{}, theta)
	cuts := []int{0, 5, 1030, 4097, len(theta)}
	var got [][]float32
	for i := 1; i < len(cuts); i++ {
		lo, hi := cuts[i-1], cuts[i]
		o, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{Offset: uint64(lo)})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		o.SetDP(testDP)
		o.SetSeed(2026)
		tn, err := o.Register("shard", theta[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range grads {
			if err := stepAll(o, []*runtime.Tensor{tn}, g[lo:hi]); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := tn.Params()
		got = append(got, p)
	}
	for _, g := range grads {
		if err := stepAll(whole, wts, g); err != nil {
			t.Fatal(err)
		}
	}
	if !sameBits(slices.Concat(got...), flatParams(t, wts)) {
		t.Error("the shards differ from the whole")
	}
}

// TestOptimizerErrors covers the misuses that must be errors.
func TestOptimizerErrors(t *testing.T) {
	o, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	tn, _ := o.Register("w", []float32{1, 2, 3})
	for _, c := range []struct {
		name string
		err  error
	}{
		{"step without DP", o.Step()},
		{"bad DP", o.SetDP(runtime.DP{ClipNorm: 0, NoiseMultiplier: 1, BatchSize: 1})},
		{"unknown hyper", o.SetHyper("nope", 1)},
		{"out of range", o.SetHyper("omega", 2)},
		{"unstable", o.SetHyper("omega", 1.4)},
		{"duplicate tensor", func() error { _, err := o.Register("w", nil); return err }()},
		{"short gradient", tn.SetGrad([]float32{1})},
		{"unknown state", func() error { _, err := tn.State("nope"); return err }()},
		{"late register", func() error {
			if err := tn.SetGrad([]float32{1, 2, 3}); err != nil {
				return nil // the test wants the Register error
			}
			_, err := o.Register("late", []float32{1})
			return err
		}()},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := runtime.Open(t.TempDir(), runtime.Options{}); err == nil {
		t.Error("Open of a directory without a manifest succeeded")
	}
	if _, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{Backend: "tpu"}); err == nil {
		t.Error("Open with backend tpu succeeded")
	}
}

// TestObservation reports fiber's two-point weights, which follow the hypers.
func TestObservation(t *testing.T) {
	o, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	obs := o.Observation()
	a := (1 - 0.6) / (0.6 * 0.7) // (1 - kappa) / (kappa * gamma) at the defaults
	if obs.Kind != "two_point" || math.Abs(obs.A-a) > 1e-15 || obs.Lookahead != 0.7 {
		t.Errorf("observation %+v, want two_point with a = %v, lookahead 0.7", obs, a)
	}
	if err := o.SetHyper("gamma", 2); err != nil {
		t.Fatal(err)
	}
	if obs := o.Observation(); obs.Lookahead != 2 {
		t.Errorf("lookahead %v after gamma = 2", obs.Lookahead)
	}
	sgd, err := runtime.Open(kernelDir(t, "dp_sgd"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if obs := sgd.Observation(); obs.Kind != "" {
		t.Errorf("dp_sgd observes %+v", obs)
	}
}

// TestOpenPackage runs the generated package compiled into the test through
// the runtime: the same bits as the host kernel.
func TestOpenPackage(t *testing.T) {
	theta, grads := inputs(3)
	pkg, err := runtime.OpenPackage(runtime.Package{Manifest: fiber.Manifest(), Step: fiber.StepKernel}, runtime.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close()
	pkg.SetDP(testDP)
	pkg.SetSeed(2026)
	pt, _ := pkg.Register("all", theta)
	kernel, kts := openFiber(t, runtime.Options{}, theta)
	for _, g := range grads {
		if err := stepAll(pkg, []*runtime.Tensor{pt}, g); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(kernel, kts, g); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := pt.Params()
	if !sameBits(got, flatParams(t, kts)) || pkg.Backend() != runtime.Go {
		t.Errorf("OpenPackage (backend %s) differs from the host kernel", pkg.Backend())
	}
	if _, err := runtime.OpenPackage(runtime.Package{Manifest: fiber.Manifest()}, runtime.Options{}); err == nil {
		t.Error("OpenPackage without a step function succeeded")
	}
	if _, err := runtime.OpenPackage(runtime.Package{Manifest: []byte("{}"), Step: fiber.StepKernel}, runtime.Options{}); err == nil {
		t.Error("OpenPackage of a bad manifest succeeded")
	}
}

// TestStaleSharedObject: a shared object built from another module than the
// manifest describes is refused at Open with a clear error, not run.
func TestStaleSharedObject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fiber")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "generated", "fiber", "fiber")
	copyFile(t, src+".json", filepath.Join(dir, "fiber.json"))
	ll, err := os.ReadFile(src + ".ll")
	if err != nil {
		t.Fatal(err)
	}
	stale := strings.Replace(string(ll), `c"`, `c"0`, 1) // another stamp: as if built from an older fiber.ll
	stale = strings.Replace(stale, "[65 x i8]", "[66 x i8]", 1)
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.SharedObject(stale, "fiber_cpu", filepath.Join(dir, "fiber.so")); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} { // refused at Open, whichever backend would run
		_, err := runtime.Open(dir, runtime.Options{Backend: backend})
		if err == nil || !strings.Contains(err.Error(), "was not built from the fiber.ll") || !strings.Contains(err.Error(), "rebuild it with fibergen build") {
			t.Errorf("%s: a stale shared object: got %v", backend, err)
		}
	}
	if _, err := runtime.OpenCompiled(runtime.Compiled{Manifest: readManifest(t, src+".json"), SharedObject: filepath.Join(dir, "fiber.so")}, runtime.Options{}); err == nil {
		t.Error("OpenCompiled of a stale shared object succeeded")
	}
}

func readManifest(t *testing.T, path string) []byte {
	t.Helper()
	m, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStepNeedsNewGradient: Step refuses to step twice on one gradient —
// a second release of the batch that the accountant would not count —
// until SetGrad or Privatize sets a new one, unless AllowGradientReuse.
func TestStepNeedsNewGradient(t *testing.T) {
	theta, grads := inputs(2)
	o, ts := openFiber(t, runtime.Options{}, theta)
	if err := o.Step(); err == nil || !strings.Contains(err.Error(), "no gradient for tensor") {
		t.Fatalf("a step before any gradient: %v", err)
	}
	if err := stepAll(o, ts, grads[0]); err != nil {
		t.Fatal(err)
	}
	err := o.Step()
	if err == nil || !strings.Contains(err.Error(), "Step: no gradient for tensor "+ts[0].Name+" since the last step") {
		t.Fatalf("a second step on the same gradient: %v", err)
	}
	if o.Steps() != 1 {
		t.Errorf("the refused step counted: %d steps", o.Steps())
	}
	// One tensor's new gradient is not enough.
	if err := ts[0].SetGrad(grads[1][:ts[0].Len]); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err == nil || !strings.Contains(err.Error(), ts[1].Name) {
		t.Errorf("a step with one tensor's gradient new: %v", err)
	}
	if err := stepAll(o, ts, grads[1]); err != nil || o.Steps() != 2 {
		t.Errorf("a step on new gradients: %v (%d steps)", err, o.Steps())
	}

	r, rts := openFiber(t, runtime.Options{AllowGradientReuse: true}, theta)
	if err := stepAll(r, rts, grads[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.Step(); err != nil {
		t.Errorf("AllowGradientReuse: %v", err)
	}
}
