package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// The CUDA backend's tests. Those that need a GPU skip without a driver or
// a device, unless FIBERGEN_REQUIRE_CUDA=1 makes that a failure. They need
// neither LLVM nor a Go toolchain on the GPU host (the reference they
// compare with is the Go backend, from the manifest alone): build
//
//	CGO_ENABLED=0 go test -c -o runtime.test ./runtime
//
// copy the binary and the repository's generated/ there, and run it from
// runtime/ (cd runtime && FIBERGEN_REQUIRE_CUDA=1 ../runtime.test -test.run CUDA -test.v).

// cudaUsable returns nil when the driver loads and sees a device.
func cudaUsable() error {
	drv, err := cudadrv.Load()
	if err != nil {
		return err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("the driver sees no device")
	}
	return nil
}

// needCUDA skips the test without a usable device, or fails it when
// FIBERGEN_REQUIRE_CUDA=1.
func needCUDA(t *testing.T) {
	t.Helper()
	if err := cudaUsable(); err != nil {
		if os.Getenv("FIBERGEN_REQUIRE_CUDA") == "1" {
			t.Fatalf("CUDA required (FIBERGEN_REQUIRE_CUDA=1) but not usable: %v", err)
		}
		t.Skipf("no CUDA device: %v", err)
	}
}

// cudaContext returns the primary context of device 0 (the optimizers'
// device), released when the test ends: a trainer's own handle on it.
func cudaContext(t *testing.T) *cudadrv.Context {
	t.Helper()
	needCUDA(t)
	drv, err := cudadrv.Load()
	if err != nil {
		t.Fatal(err)
	}
	return deviceContext(t, drv, false)
}

// deviceContext retains the primary context of drv's device 0 for the
// test, and releases it after, which must work unless poisoned: a test
// that faults the device on purpose (TestStepFaultRefusesUntilLoad).
func deviceContext(t *testing.T, drv *cudadrv.Driver, poisoned bool) *cudadrv.Context {
	t.Helper()
	dev, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil && !poisoned {
			t.Error(err)
		}
	})
	t.Logf("device %s", dev)
	return ctx
}

// ptxDir lays out a directory as fibergen build does, with the checked-in
// manifest and PTX only: the CUDA and Go backends need nothing else (and so
// no LLVM, which a GPU host may lack).
func ptxDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "generated", name, name)
	copyFile(t, src+".json", filepath.Join(dir, name+".json"))
	copyFile(t, src+".ptx", filepath.Join(dir, name+".ptx"))
	return dir
}

// openFiberIn is openFiber on the optimizer in dir.
func openFiberIn(t *testing.T, dir string, opts runtime.Options, theta []float32) (*runtime.Optimizer, []*runtime.Tensor) {
	t.Helper()
	return openSized(t, dir, opts, tensorSizes, theta)
}

// stateNames are the optimizer's states, in ABI order.
func stateNames(o *runtime.Optimizer) []string {
	var out []string
	for _, b := range o.Manifest().Buffers[2:] {
		out = append(out, b.Name)
	}
	return out
}

// flatState concatenates the tensors' parts of a state.
func flatState(t *testing.T, ts []*runtime.Tensor, name string) []float32 {
	t.Helper()
	var out []float32
	for _, tn := range ts {
		s, err := tn.State(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s...)
	}
	return out
}

// firstDiff describes the first coordinate where got and want differ
// (floatbits.Diff).
func firstDiff(got, want []float32) string {
	if d := floatbits.Diff(want, got); d != "" {
		return d
	}
	return "no difference"
}

// sized returns gpu on a GPU and sim on the PTX simulator (make test runs
// these tests there with FIBERGEN_CUDA_SIM=1), which executes every
// instruction of every thread in Go: a smaller size.
func sized(ctx *cudadrv.Context, gpu, sim int) int {
	if cudasim.Simulated(ctx.Driver()) {
		return sim
	}
	return gpu
}

// TestCUDAUnavailable runs where CUDA is not usable (this is what CI
// checks): Open with Backend CUDA succeeds, and the first Step (or
// StepDevice) returns an error naming the driver library, without a panic
// and without changing anything; Close has nothing to release.
func TestCUDAUnavailable(t *testing.T) {
	if err := cudaUsable(); err == nil {
		t.Skip("CUDA is usable here")
	}
	theta, grads := inputs(1)
	o, ts := openFiberIn(t, ptxDir(t, "fiber"), runtime.Options{Backend: runtime.CUDA}, theta)
	for i := range 2 {
		err := stepAll(o, ts, grads[0])
		if err == nil {
			t.Fatal("a CUDA step succeeded without a usable driver")
		}
		if !strings.Contains(err.Error(), "libcuda") {
			t.Errorf("error does not mention libcuda: %v", err)
		}
		if i == 0 {
			t.Logf("Step: %v", err)
		}
	}
	if err := o.Step(); err == nil || !strings.Contains(err.Error(), "libcuda") {
		t.Errorf("Step: %v", err)
	}
	if o.Steps() != 0 || o.Backend() != "" {
		t.Errorf("after failed steps: %d steps, backend %q", o.Steps(), o.Backend())
	}
	if err := o.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	d, err := runtime.Open(ptxDir(t, "fiber"), runtime.Options{Backend: runtime.CUDA})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetDP(testDP)
	bufs := []runtime.DevicePtr{0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000} // theta g gt r m v lookahead
	if err := d.StepDevice(bufs, 16, 0); err == nil || !strings.Contains(err.Error(), "libcuda") {
		t.Errorf("StepDevice: %v", err)
	}
	if err := d.InitDeviceStates(bufs, 16); err == nil || !strings.Contains(err.Error(), "libcuda") {
		t.Errorf("InitDeviceStates: %v", err)
	}
	if d.Steps() != 0 {
		t.Errorf("StepDevice without a driver counted a step")
	}
}

// TestStepDeviceErrors covers the misuses StepDevice refuses before it
// touches the driver (the pointers are never dereferenced).
func TestStepDeviceErrors(t *testing.T) {
	dir := ptxDir(t, "fiber")
	open := func(opts runtime.Options) *runtime.Optimizer { return openDP(t, dir, opts, testDP) }
	cuda := runtime.Options{Backend: runtime.CUDA}
	good := []runtime.DevicePtr{0x10000, 0x20000, 0x30000, 0x40000, 0x50000, 0x60000, 0x70000} // theta g gt r m v lookahead
	with := func(i int, p runtime.DevicePtr) []runtime.DevicePtr {
		b := slices.Clone(good)
		b[i] = p
		return b
	}
	registered := open(cuda)
	registered.Register("w", []float32{1, 2, 3})
	noDP, err := runtime.Open(dir, cuda)
	if err != nil {
		t.Fatal(err)
	}
	defer noDP.Close()
	for _, c := range []struct {
		name   string
		o      *runtime.Optimizer
		bufs   []runtime.DevicePtr
		n      int
		offset uint64
		want   string
	}{
		{"cpu backend", open(runtime.Options{Backend: runtime.CPU, GoFallback: true}), good, 16, 0, "a device backend (CUDA, PTXSim)"},
		{"go backend", open(runtime.Options{Backend: runtime.Go}), good, 16, 0, "a device backend (CUDA, PTXSim)"},
		{"registered tensors", registered, good, 16, 0, "registered tensors"},
		{"too few buffers", open(cuda), good[:6], 16, 0, "6 buffers given"},
		{"too many buffers", open(cuda), append(slices.Clone(good), 0x80000), 16, 0, "8 buffers given"},
		{"negative n", open(cuda), good, -1, 0, "-1 coordinates"},
		{"null theta", open(cuda), with(0, 0), 16, 0, "null pointer"},
		{"misaligned g", open(cuda), with(1, 0x20002), 16, 0, "not 4-byte aligned"},
		{"overlap", open(cuda), with(3, 0x20000+4*15), 16, 0, "overlap"},
		{"same buffer twice", open(cuda), with(5, 0x10000), 16, 0, "overlap"},
		{"wraps around", open(cuda), with(2, runtime.DevicePtr(math.MaxUint64-7)), 16, 0, "cannot hold"},
		{"offset too large", open(cuda), good, 16, math.MaxInt64 - 8, "passes 2^63-1"},
		{"no DP", noDP, good, 16, 0, "SetDP"},
	} {
		err := c.o.StepDevice(c.bufs, c.n, c.offset)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
		if c.o.Steps() != 0 {
			t.Errorf("%s: the step counter moved", c.name)
		}
	}
	// Adjacent buffers do not overlap: the arguments pass, and the error
	// is the missing driver's. Where a driver works these pointers would
	// reach a kernel, so that half runs only without one.
	if cudaUsable() != nil {
		adjacent := []runtime.DevicePtr{0x10000, 0x10040, 0x10080, 0x100c0, 0x10100, 0x10140, 0x10180}
		if err := open(cuda).StepDevice(adjacent, 16, 0); err == nil || !strings.Contains(err.Error(), "libcuda") {
			t.Errorf("adjacent buffers: %v, want the missing driver's error", err)
		}
	}
}

// TestCUDAMatchesCPU steps fiber on the GPU and on the CPU (the Go
// reference, which the CPU host kernel matches bit for bit) from the same
// seed: parameters and states agree bit for bit after every step, with the
// tensors starting at awkward offsets and with a global offset past 2^32.
func TestCUDAMatchesCPU(t *testing.T) {
	needCUDA(t)
	const steps = 6
	theta, grads := inputs(steps)
	dir := ptxDir(t, "fiber")
	for _, offset := range []uint64{0, 1<<33 + 3} {
		t.Run(fmt.Sprintf("offset=%d", offset), func(t *testing.T) {
			gpu, gts := openFiberIn(t, dir, runtime.Options{Backend: runtime.CUDA, Offset: offset}, theta)
			cpu, cts := openFiberIn(t, dir, runtime.Options{Backend: runtime.Go, Offset: offset}, theta)
			for s, g := range grads {
				if err := stepAll(gpu, gts, g); err != nil {
					t.Fatalf("step %d on the GPU: %v", s, err)
				}
				if err := stepAll(cpu, cts, g); err != nil {
					t.Fatal(err)
				}
				got, want := flatParams(t, gts), flatParams(t, cts)
				if !sameBits(got, want) {
					t.Fatalf("step %d: GPU parameters differ: %s", s, firstDiff(got, want))
				}
			}
			for _, name := range stateNames(gpu) {
				got, want := flatState(t, gts, name), flatState(t, cts, name)
				if !sameBits(got, want) {
					t.Errorf("state %s differs: %s", name, firstDiff(got, want))
				}
			}
			if gpu.Backend() != runtime.CUDA || gpu.Steps() != steps {
				t.Errorf("backend %s after %d steps, want cuda after %d", gpu.Backend(), gpu.Steps(), steps)
			}
		})
	}
}

// TestCUDANonFinite plants NaNs and infinities: the GPU guard reports the
// first, the step changes nothing, and the trajectory afterwards is that of
// an optimizer that never saw the bad gradient. Large finite values,
// subnormals and signed zeros pass.
func TestCUDANonFinite(t *testing.T) {
	needCUDA(t)
	theta, grads := inputs(2)
	dir := ptxDir(t, "fiber")
	o, ts := openFiberIn(t, dir, runtime.Options{Backend: runtime.CUDA}, theta)
	clean, cts := openFiberIn(t, dir, runtime.Options{Backend: runtime.CUDA}, theta)
	n := len(theta)
	odd := slices.Clone(grads[0])
	odd[0] = math.MaxFloat32
	odd[1] = -math.MaxFloat32
	odd[2] = math.SmallestNonzeroFloat32
	odd[3] = float32(math.Copysign(0, -1))
	nan := math.Float32frombits(0x7fc00001)
	for _, c := range []struct {
		bad    map[int]float32
		tensor string
		index  int
	}{
		{map[int]float32{ts[2].Offset + 17: float32(math.NaN()), ts[4].Offset + 3: float32(math.Inf(-1))}, "c", 17},
		{map[int]float32{0: float32(math.Inf(1))}, "a", 0},
		{map[int]float32{n - 1: float32(math.Inf(-1))}, "e", ts[4].Len - 1},
		{map[int]float32{n - 1: nan, 5: math.Float32frombits(0xff800001)}, "a", 5},
	} {
		bad := slices.Clone(odd)
		for i, v := range c.bad {
			bad[i] = v
		}
		before := flatParams(t, ts)
		err := stepAll(o, ts, bad)
		var nf *runtime.NonFiniteError
		if !errors.As(err, &nf) || nf.Tensor != c.tensor || nf.Index != c.index {
			t.Fatalf("bad entries %v: got %v, want a NonFiniteError at %s[%d]", c.bad, err, c.tensor, c.index)
		}
		first := n
		for i := range c.bad {
			first = min(first, i)
		}
		if math.Float32bits(nf.Value) != math.Float32bits(c.bad[first]) {
			t.Errorf("reported value %v (%#08x), want %v (%#08x)", nf.Value, math.Float32bits(nf.Value), c.bad[first], math.Float32bits(c.bad[first]))
		}
		if o.Steps() != 0 || !sameBits(flatParams(t, ts), before) {
			t.Fatal("the skipped step changed the step counter or the parameters")
		}
	}
	for _, name := range stateNames(o) {
		if !sameBits(flatState(t, ts, name), flatState(t, cts, name)) {
			t.Errorf("the skipped steps changed state %s", name)
		}
	}
	for _, g := range grads {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(clean, cts, g); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := flatParams(t, ts), flatParams(t, cts); !sameBits(got, want) {
		t.Errorf("after skipped steps the trajectory differs: %s", firstDiff(got, want))
	}
	// The finite extremes pass the guard (the step may overflow: no matter).
	if err := stepAll(o, ts, odd); err != nil {
		t.Errorf("a gradient with finite extremes: %v", err)
	}
}

// deviceArena is a trainer's own allocation, carved into the optimizer's
// buffers: n floats each, the first skew floats into the arena, each next
// one stride floats after the last.
type deviceArena struct {
	ctx  *cudadrv.Context
	base cudadrv.DevicePtr
	bufs []runtime.DevicePtr
	n    int
	size int // floats in the arena
}

func newDeviceArena(t *testing.T, ctx *cudadrv.Context, nbuf, n, skew int) *deviceArena {
	t.Helper()
	stride := (n + 63) &^ 63
	if skew%4 != 0 {
		stride += 1 // every buffer off the 16-byte grid, differently
	}
	size := skew + nbuf*stride + 64
	base, err := ctx.Alloc(4 * size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.Free(base); err != nil {
			t.Error(err)
		}
	})
	// Poison the whole arena: a kernel writing outside its buffer shows.
	if err := ctx.MemsetD32(base, 0x7fbadbad, size); err != nil {
		t.Fatal(err)
	}
	a := &deviceArena{ctx: ctx, base: base, n: n, size: size}
	for i := range nbuf {
		a.bufs = append(a.bufs, runtime.DevicePtr(base.Add(4*(skew+i*stride))))
	}
	return a
}

func (a *deviceArena) put(t *testing.T, i int, v []float32) {
	t.Helper()
	if err := a.ctx.CopyHtoD(cudadrv.DevicePtr(a.bufs[i]), v); err != nil {
		t.Fatal(err)
	}
}

func (a *deviceArena) get(t *testing.T, i int) []float32 {
	t.Helper()
	out := make([]float32, a.n)
	if err := a.ctx.CopyDtoH(out, cudadrv.DevicePtr(a.bufs[i])); err != nil {
		t.Fatal(err)
	}
	return out
}

// putStored writes v into buffer i stored as d: float32s, or each value's
// 16 bits rounded to nearest (as Register rounds parameters).
func (a *deviceArena) putStored(t *testing.T, i int, d lang.DType, v []float32) {
	t.Helper()
	if d.Size() == 4 {
		a.put(t, i, v)
		return
	}
	bits := make([]uint16, len(v))
	for j, x := range v {
		bits[j] = rng.Bits(d, x)
	}
	if err := cudadrv.CopyToDevice(a.ctx, cudadrv.DevicePtr(a.bufs[i]), bits); err != nil {
		t.Fatal(err)
	}
}

// getStored reads buffer i stored as d, widened to float32s.
func (a *deviceArena) getStored(t *testing.T, i int, d lang.DType) []float32 {
	t.Helper()
	if d.Size() == 4 {
		return a.get(t, i)
	}
	bits := make([]uint16, a.n)
	if err := cudadrv.CopyFromDevice(a.ctx, bits, cudadrv.DevicePtr(a.bufs[i])); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, a.n)
	for j, h := range bits {
		out[j] = rng.Widen(d, h)
	}
	return out
}

// TestCUDAStepDevice steps fiber on device buffers the test allocates as a
// trainer would (one arena, carved up), aligned for the vector path and
// not, and compares with the Go reference over the same coordinates at the
// same global offset. The guard skips a bad gradient without touching the
// trainer's buffers, and the buffers outlive the optimizer.
func TestCUDAStepDevice(t *testing.T) {
	ctx := cudaContext(t)
	dir := ptxDir(t, "fiber")
	for _, c := range []struct {
		n      int
		offset uint64
		skew   int
	}{
		// Large enough that the guard's and the step's grid-stride loops
		// go round more than once on an H100 (32 blocks of 256 threads per
		// SM at most), and on the simulator's 4 SMs.
		{sized(ctx, 3<<20+3, 1<<17+3), 12, 0},
		{10007, 1<<33 + 5, 1},
		{5, 2, 3},
	} {
		t.Run(fmt.Sprintf("n=%d,offset=%d,skew=%d", c.n, c.offset, c.skew), func(t *testing.T) {
			const steps = 3
			r := rand.New(rand.NewPCG(uint64(c.n), c.offset))
			theta := make([]float32, c.n)
			for i := range theta {
				theta[i] = float32(r.NormFloat64())
			}
			grad := func() []float32 {
				g := make([]float32, c.n)
				for i := range g {
					g[i] = float32(0.1 * r.NormFloat64())
				}
				return g
			}

			ref, err := runtime.Open(dir, runtime.Options{Backend: runtime.Go, Offset: c.offset})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			ref.SetDP(testDP)
			ref.SetSeed(77)
			w, err := ref.Register("w", theta)
			if err != nil {
				t.Fatal(err)
			}

			o, err := runtime.Open(dir, runtime.Options{Backend: runtime.CUDA})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			o.SetDP(testDP)
			o.SetSeed(77)
			names := stateNames(o)
			a := newDeviceArena(t, ctx, 2+len(names), c.n, c.skew)
			a.put(t, 0, theta)
			if err := o.InitDeviceStates(a.bufs, c.n); err != nil {
				t.Fatal(err)
			}
			if o.Backend() != runtime.CUDA {
				t.Errorf("backend %q", o.Backend())
			}
			check := func(what string) {
				t.Helper()
				p, _ := w.Params()
				if got := a.get(t, 0); !sameBits(got, p) {
					t.Fatalf("%s: theta differs: %s", what, firstDiff(got, p))
				}
				for i, name := range names {
					s, err := w.State(name)
					if err != nil {
						t.Fatal(err)
					}
					if got := a.get(t, 2+i); !sameBits(got, s) {
						t.Fatalf("%s: state %s differs: %s", what, name, firstDiff(got, s))
					}
				}
			}
			check("initial states")

			for s := range steps {
				g := grad()
				a.put(t, 1, g)
				if err := errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.StepDevice(a.bufs, c.n, c.offset)); err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
				if err := errors.Join(w.SetGrad(g), ref.TrustClippedGradient()); err != nil {
					t.Fatal(err)
				}
				if err := ref.Step(); err != nil {
					t.Fatal(err)
				}
				if got := a.get(t, 1); !sameBits(got, g) {
					t.Fatalf("step %d changed the gradient buffer: %s", s, firstDiff(got, g))
				}
				check(fmt.Sprintf("step %d", s))
			}

			// A bad gradient: reported, nothing changes, including the
			// arena around the buffers.
			g := grad()
			bad := []int{c.n - 1, c.n / 2, c.n/2 + 1}
			for _, i := range bad {
				g[i] = float32(math.NaN())
			}
			a.put(t, 1, g)
			all := func() []float32 {
				out := make([]float32, a.size)
				if err := ctx.CopyDtoH(out, a.base); err != nil {
					t.Fatal(err)
				}
				return out
			}
			before := all()
			o.GradientWritten()
			o.TrustClippedGradient()
			err = o.StepDevice(a.bufs, c.n, c.offset)
			var nf *runtime.NonFiniteError
			if !errors.As(err, &nf) || nf.Index != c.n/2 || nf.Tensor != "g" || !math.IsNaN(float64(nf.Value)) {
				t.Fatalf("got %v, want a NonFiniteError at g[%d]", err, c.n/2)
			}
			if o.Steps() != steps || !sameBits(all(), before) {
				t.Fatal("the skipped step changed the step counter or the buffers")
			}

			// n == 0 counts a step and touches nothing.
			if err := o.StepDevice(a.bufs, 0, c.offset); err != nil || o.Steps() != steps+1 {
				t.Fatalf("StepDevice with n = 0: %v, %d steps", err, o.Steps())
			}
			if !sameBits(all(), before) {
				t.Fatal("StepDevice with n = 0 changed the buffers")
			}

			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			// The trainer's memory is the trainer's: still there.
			if got := a.get(t, 1); !sameBits(got, g) {
				t.Fatalf("after Close: %s", firstDiff(got, g))
			}
		})
	}
}

// TestCUDAClose closes a stepped optimizer: the host copies hold the
// device's values (a new backend starts from them and goes on where the
// old one stopped), and the device memory is given back.
func TestCUDAClose(t *testing.T) {
	ctx := cudaContext(t)
	dir := ptxDir(t, "fiber")
	theta, grads := inputs(3)
	o, ts := openFiberIn(t, dir, runtime.Options{Backend: runtime.CUDA}, theta)
	ref, rts := openFiberIn(t, dir, runtime.Options{Backend: runtime.Go}, theta)
	for _, g := range grads[:2] {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(ref, rts, g); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if o.Backend() != "" {
		t.Errorf("backend %q after Close", o.Backend())
	}
	if got, want := flatParams(t, ts), flatParams(t, rts); !sameBits(got, want) {
		t.Fatalf("parameters after Close: %s", firstDiff(got, want))
	}
	for _, name := range stateNames(o) {
		if got, want := flatState(t, ts, name), flatState(t, rts, name); !sameBits(got, want) {
			t.Fatalf("state %s after Close: %s", name, firstDiff(got, want))
		}
	}
	if err := stepAll(o, ts, grads[2]); err != nil {
		t.Fatal(err)
	}
	if err := stepAll(ref, rts, grads[2]); err != nil {
		t.Fatal(err)
	}
	if got, want := flatParams(t, ts), flatParams(t, rts); !sameBits(got, want) || o.Steps() != 3 {
		t.Fatalf("step after reopening (%d steps): %s", o.Steps(), firstDiff(got, want))
	}

	// Memory: an optimizer over 2^25 coordinates holds 6·128 MiB on the
	// device; after Close the driver has it back. One round first, so that
	// what the context keeps once a kernel has run (local memory, the JIT
	// cache) is there before the measurements.
	n := sized(ctx, 1<<25, 1<<14)
	slack := int64(64 << 20) // what a driver may keep
	if cudasim.Simulated(ctx.Driver()) {
		slack = 0
	}
	big := make([]float32, n)
	g := make([]float32, n)
	round := func() (during int64) {
		o, err := runtime.Open(dir, runtime.Options{Backend: runtime.CUDA})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		o.SetDP(testDP)
		w, err := o.Register("w", big)
		if err != nil {
			t.Fatal(err)
		}
		if err := stepAll(o, []*runtime.Tensor{w}, g); err != nil {
			t.Fatal(err)
		}
		free, _, err := ctx.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		return free
	}
	round()
	for i := range 3 {
		before, _, err := ctx.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		during := round()
		after, _, err := ctx.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: free %d MiB before, %d MiB while open, %d MiB after", i, before>>20, during>>20, after>>20)
		if before-during < int64(6*4*n) {
			t.Errorf("round %d: only %d bytes in use while open, want at least %d", i, before-during, 6*4*n)
		}
		if before-after > slack {
			t.Errorf("round %d: %d bytes not given back by Close", i, before-after)
		}
	}
}

// TestCUDAPrivatizeDevice: privatizing device rows into a device gradient
// gives the host kernel's bits, scales computed or given, and refuses a
// non-finite example leaving the gradient as it was.
func TestCUDAPrivatizeDevice(t *testing.T) {
	ctx := cudaContext(t)
	const batch, n = 6, 5003
	for _, name := range []string{"fiber", "dp_sgd"} {
		cpu, err := runtime.Open(kernelDir(t, name), runtime.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer cpu.Close()
		gpu, err := runtime.Open(ptxDir(t, name), runtime.Options{Backend: runtime.CUDA})
		if err != nil {
			t.Fatal(err)
		}
		defer gpu.Close()
		dp := runtime.DP{ClipNorm: 0.5, NoiseMultiplier: 1, BatchSize: 8}
		cpu.SetDP(dp)
		gpu.SetDP(dp)
		cur, look, want, wantSt := hostPrivatized(t, cpu, 5, batch, n)
		var devLook runtime.DevicePtr
		a := newDeviceArena(t, ctx, 3, batch*n, 0)
		a.put(t, 0, cur)
		if look != nil {
			a.put(t, 1, look)
			devLook = a.bufs[1]
		}
		for _, scales := range [][]float32{nil, wantSt.Scales} {
			if scales != nil {
				gpu.IssueScales(scales)
			}
			st, err := gpu.PrivatizeDevice(a.bufs[2], n, a.bufs[0], devLook, batch, scales)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.get(t, 2)[:n]; !sameBits(got, want) || !sameBits(st.Scales, wantSt.Scales) {
				t.Errorf("%s (scales given: %v): the device privatization differs from the host's", name, scales != nil)
			}
		}
		bad := slices.Clone(cur)
		bad[3*n+7] = float32(math.Inf(1))
		a.put(t, 0, bad)
		before := a.get(t, 2)
		var ne *runtime.NonFiniteExampleError
		if _, err := gpu.PrivatizeDevice(a.bufs[2], n, a.bufs[0], devLook, batch, nil); !errors.As(err, &ne) || ne.Example != 3 {
			t.Errorf("%s: a non-finite example: %v", name, err)
		}
		if !sameBits(a.get(t, 2), before) {
			t.Errorf("%s: a refused privatization changed the gradient", name)
		}
	}
}

// hostPrivatized returns k rows of n values from seed (and, for a
// two-point optimizer, look-ahead rows from seed+1), and their clipped
// sum and stats by the host optimizer o: what a device privatization of
// them must give.
func hostPrivatized(t *testing.T, o *runtime.Optimizer, seed uint64, k, n int) (cur, look, want []float32, st runtime.PrivatizeStats) {
	t.Helper()
	cur = exampleRows(seed, k, n)
	if o.Observation().Kind == "two_point" {
		look = exampleRows(seed+1, k, n)
	}
	want = make([]float32, n)
	st, err := o.PrivatizeTo(want, cur, look, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cur, look, want, st
}

// TestCUDAReleaseOnce: on device buffers the trainer owns, StepDevice
// releases what PrivatizeDevice wrote into the gradient it steps, once; a
// privatization of other memory is not that gradient; an optimizer over a
// part of a flat gradient adopts the privatization of the whole.
func TestCUDAReleaseOnce(t *testing.T) {
	ctx := cudaContext(t)
	const n, batch = 8, 3
	open := func() *runtime.Optimizer {
		return openDP(t, ptxDir(t, "dp_sgd"), runtime.Options{Backend: runtime.CUDA}, testDP)
	}
	a := newDeviceArena(t, ctx, 5, batch*2*n, 0) // theta, g (2n: two optimizers' halves), rows, other, theta2
	a.put(t, 2, exampleRows(1, batch, 2*n))
	o, b := open(), open()
	bufs := []runtime.DevicePtr{a.bufs[0], a.bufs[1]}
	wantRefused(t, o, 0, o.StepDevice(bufs, n, 0), stale)
	if _, err := o.PrivatizeDevice(a.bufs[3], n, a.bufs[2], 0, batch, nil); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 0, o.StepDevice(bufs, n, 0), "is not the one privatized")
	wantRefused(t, o, 0, o.CheckDeviceGradient(bufs[1], n), "is not the one privatized")
	if _, err := o.PrivatizeDevice(a.bufs[1], 2*n, a.bufs[2], 0, batch, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.StepDevice(bufs, n, 0); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 1, o.StepDevice(bufs, n, 0), stale)
	if err := b.AdoptPrivatized(o); err != nil {
		t.Fatal(err)
	}
	if err := b.StepDevice([]runtime.DevicePtr{a.bufs[4], a.bufs[1].Add(4 * n)}, n, n); err != nil {
		t.Errorf("a step on the other half of the privatized gradient: %v", err)
	}
}

// TestStepFaultRefusesUntilLoad: a step whose kernel faults on the device
// after it began (here: theta's buffer shorter than n, on a simulated
// device of its own, which the fault poisons) may be applied in part, so
// the optimizer refuses every step after it until a checkpoint is loaded.
func TestStepFaultRefusesUntilLoad(t *testing.T) {
	opts := simOptions(t, runtime.Options{Backend: runtime.PTXSim})
	o := openDP(t, ptxDir(t, "dp_sgd"), opts, testDP)
	defer o.Close() // fails: the fault poisoned the context
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	if err := o.Save(ckpt); err != nil {
		t.Fatal(err)
	}
	const n = 4096
	bufs := faultyBuffers(t, opts.Driver, n)
	step := func() error {
		return errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.StepDevice(bufs, n, 0))
	}
	var fault *backend.FaultError
	if err := step(); !errors.As(err, &fault) {
		t.Fatalf("a step past theta's buffer: %v, want a *backend.FaultError", err)
	}
	if err := step(); err == nil || !strings.Contains(err.Error(), "load a checkpoint (Load) before stepping again") {
		t.Errorf("the step after a fault: %v, want a refusal", err)
	}
	if err := o.Load(ckpt); err != nil {
		t.Fatal(err)
	}
	if err := step(); err != nil && strings.Contains(err.Error(), "failed part-way") {
		t.Errorf("the step after Load is still refused for the fault: %v", err)
	}
}

// faultyBuffers allocates dp_sgd's buffers on drv's device: theta of 4
// floats, the gradient of n zeros.
func faultyBuffers(t *testing.T, drv *cudadrv.Driver, n int) []runtime.DevicePtr {
	t.Helper()
	ctx := deviceContext(t, drv, true)
	g, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	theta, err := ctx.Alloc(4 * 4) // after g: theta[0:n] runs past it, not into g
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.MemsetD32(g, 0, n); err != nil {
		t.Fatal(err)
	}
	return []runtime.DevicePtr{runtime.DevicePtr(theta), runtime.DevicePtr(g)}
}
