package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/cudadrv"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// The PTX checks, run twice: on a GPU (TestGPU*) and on the PTX simulator
// (TestPTXSim*, on every CI run), through the same cudadrv code — the
// simulator is a CUDA driver in Go (internal/cudasim). On the simulator
// the sizes are smaller and the steps fewer, since it executes every
// instruction of every thread in Go.
//
// The GPU check needs no Go toolchain on the GPU host: build it with
//
//	CGO_ENABLED=0 go test -c -o gpu.test ./tests
//
// copy the binary and the repository's generated/ there, and run it from
// tests/ (cd tests && ../gpu.test -test.run GPU -test.v). Without a CUDA
// driver it skips, unless FIBERGEN_REQUIRE_CUDA=1 makes that a failure.

// ptxRun is where the PTX checks run and on what: a context (a GPU's or
// the simulator's), the step kernel's cases and steps, and which sizes
// the privatize and clamp_mass checks take.
type ptxRun struct {
	ctx       *cudadrv.Context
	cases     []kernelCase
	steps     int
	privCases func(name string) []privCase // the privatize cases of the optimizer name
	diagSizes []int
	// parallel runs the optimizers side by side: on a GPU host the Go
	// reference, one core each, is most of the check's time.
	parallel bool
}

// gpuRun is the check on device 0, with the host kernel test's cases; it
// skips without a GPU.
func gpuRun(t *testing.T) ptxRun {
	return ptxRun{ctx: gpuContext(t), cases: kernelCases(), steps: kernelSteps, privCases: func(name string) []privCase { return casesFor(name, true) }, diagSizes: diagSizes, parallel: true}
}

// simSizes are the step kernel's sizes on the simulator: empty, shorter
// than a group of four, one past a group, and around a block.
var simSizes = []int{0, 1, 3, 4, 5, 1023, 1025, 4099}

// simRun is the check on a new simulated device with cfg.
func simRun(t testing.TB, cfg cudasim.Config) (ptxRun, *cudasim.Sim) {
	t.Helper()
	sim, drv, err := cudasim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := driverContext(t, drv)
	var cases []kernelCase
	for _, c := range kernelCases() {
		if slices.Contains(simSizes, c.n) {
			cases = append(cases, c)
		}
	}
	for _, n := range []int{3, 4099} { // the extra sizes with offsets and skews
		cases = append(cases, kernelCase{n: n, skew: 2, offset: 1<<32 - 2, noise: rng.Philox},
			kernelCase{n: n, skew: 1, offset: 1<<35 - 3, noise: rng.Secure}, kernelCase{n: n, skew: 1, offset: 1<<35 - 3, noise: rng.Secure, raw: true})
	}
	return ptxRun{ctx: ctx, cases: cases, steps: 3, privCases: simPrivCases, diagSizes: []int{0, 1, 5, 4096, 4097, 3*4096 + 129}}, sim
}

// simPrivCases are the simulator's privatize cases of the optimizer name:
// the sharp cases (privSharpCases), and for privSweep's optimizers the
// cases of the sweep up to 4097 coordinates and 5·4097 floats.
func simPrivCases(name string) []privCase {
	cases := privSharpCases()
	if slices.Contains(privSweep, name) {
		for _, c := range privCases() {
			if c.n <= 4097 && c.batch*c.n <= 5*4097 {
				cases = append(cases, c)
			}
		}
	}
	return applicable(name, cases)
}

// gpuContext opens device 0's primary context, or skips.
func gpuContext(t *testing.T) *cudadrv.Context {
	t.Helper()
	skip := func(err error) {
		if os.Getenv("FIBERGEN_REQUIRE_CUDA") != "" {
			t.Fatal(err)
		}
		t.Skipf("no CUDA device: %v", err)
	}
	drv, err := cudadrv.Load()
	if err != nil {
		skip(err)
	}
	if n, err := drv.DeviceCount(); err != nil || n == 0 {
		skip(fmt.Errorf("%d devices (%v)", n, err))
	}
	if _, err := drv.Device(0); err != nil {
		skip(err)
	}
	return driverContext(t, drv)
}

// driverContext opens the primary context of drv's device 0, closed when
// t ends.
func driverContext(t testing.TB, drv *cudadrv.Driver) *cudadrv.Context {
	t.Helper()
	dev, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	version, _ := drv.Version()
	t.Logf("device %s, driver %s, API %d", dev, drv.Library(), version)
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// launchShape returns the grid and block to launch fn with for shape
// (block, grid; grid 0: enough blocks for threads threads): the block as
// asked, or the largest the kernel allows (cudadrv.Function.BlockFor).
func launchShape(t testing.TB, ctx *cudadrv.Context, fn *cudadrv.Function, shape [2]int, threads int) (grid, block [3]uint32) {
	t.Helper()
	b, err := fn.BlockFor(shape[0])
	if err != nil {
		t.Fatal(err)
	}
	g := shape[1]
	if g == 0 {
		g = cudadrv.GridFor(threads, b, ctx.Device().SMCount)
	}
	return [3]uint32{uint32(g), 1, 1}, [3]uint32{uint32(b), 1, 1}
}

// gpuKernel is one optimizer's step kernel, loaded from the checked-in PTX.
type gpuKernel struct {
	ctx *cudadrv.Context
	fn  *cudadrv.Function
}

func loadGPUKernel(t testing.TB, ctx *cudadrv.Context, opt *optimizer) *gpuKernel {
	t.Helper()
	fns := loadGPUFunctions(t, ctx, opt.name, opt.name+"_step")
	return &gpuKernel{ctx: ctx, fn: fns[0]}
}

// loadGPUFunctions loads generated/<name>/<name>.ptx once and returns its
// functions of the given symbols; the module is unloaded when t ends.
func loadGPUFunctions(t testing.TB, ctx *cudadrv.Context, name string, symbols ...string) []*cudadrv.Function {
	t.Helper()
	ptx, err := os.ReadFile(repoPath("generated", name, name+".ptx"))
	if err != nil {
		t.Fatal(err)
	}
	return loadFunctions(t, ctx, ptx, symbols...)
}

// loadFunctions loads the PTX module ptx and returns its functions of the
// given symbols; the module is unloaded when t ends.
func loadFunctions(t testing.TB, ctx *cudadrv.Context, ptx []byte, symbols ...string) []*cudadrv.Function {
	t.Helper()
	fns, err := moduleFunctions(t, ctx, ptx, symbols...)
	if err != nil {
		t.Fatal(err)
	}
	return fns
}

// moduleFunctions is loadFunctions returning the error of a module that
// does not load.
func moduleFunctions(t testing.TB, ctx *cudadrv.Context, ptx []byte, symbols ...string) ([]*cudadrv.Function, error) {
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { mod.Unload() })
	var fns []*cudadrv.Function
	for _, sym := range symbols {
		fn, err := mod.Function(sym)
		if err != nil {
			return nil, err
		}
		fns = append(fns, fn)
	}
	return fns, nil
}

// launch runs the kernel over the device buffers ptrs (n coordinates each)
// with the launch shape (block, grid; grid 0: enough for every group).
func (k *gpuKernel) launch(t testing.TB, ptrs []cudadrv.DevicePtr, scalars []float32, n int, rg hostkernel.Range, shape [2]int) error {
	var args []any
	for _, p := range ptrs {
		args = append(args, p)
	}
	for _, s := range scalars {
		args = append(args, s)
	}
	args = append(args, int64(n), rg.Offset, rg.Seed, rg.Step, rg.Noise, rg.Key[0], rg.Key[1], rg.Key[2], rg.Key[3])
	grid, block := launchShape(t, k.ctx, k.fn, shape, n/4+4)
	if err := k.fn.Launch(grid, block, 0, args...); err != nil {
		return err
	}
	return k.ctx.Synchronize()
}

// deviceBuffers allocates one device buffer per host buffer, skew floats
// into its allocation and with 4 floats after it, fills the floats around
// it with canaryBits and copies the host values into it.
func deviceBuffers(t testing.TB, ctx *cudadrv.Context, host [][]float32, skew int) []cudadrv.DevicePtr {
	t.Helper()
	var ptrs []cudadrv.DevicePtr
	for _, h := range host {
		base, err := ctx.Alloc(4 * (len(h) + skew + 4))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctx.Free(base) })
		if err := ctx.MemsetD32(base, canaryBits, len(h)+skew+4); err != nil {
			t.Fatal(err)
		}
		p := base.Add(4 * skew)
		if err := ctx.CopyHtoD(p, h); err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
	}
	return ptrs
}

// canaryBits fills the floats around each device buffer: a NaN no kernel
// computes.
const canaryBits = 0x7fbadbad

// canariesIntact returns an error if a kernel wrote one of the floats
// around the device buffers dev (of len(host[i]) floats, skew floats into
// their allocations).
func canariesIntact(t *testing.T, ctx *cudadrv.Context, dev []cudadrv.DevicePtr, host [][]float32, skew int) error {
	t.Helper()
	for i, p := range dev {
		for _, r := range [][2]int{{-skew, 0}, {len(host[i]), len(host[i]) + 4}} {
			got := make([]uint32, r[1]-r[0])
			if err := cudadrv.CopyFromDevice(ctx, got, p.Add(4*r[0])); err != nil {
				t.Fatal(err)
			}
			for j, v := range got {
				if v != canaryBits {
					return fmt.Errorf("buffer %d: the float at %d (of %d) was written: %#08x", i, r[0]+j, len(host[i]), v)
				}
			}
		}
	}
	return nil
}

// gpuShapes are the launch shapes (block, grid; grid 0: as many as needed)
// the cases cycle through: the noise must not depend on them. A block of
// 1024 is more than the step kernels' registers allow: it is launched
// with the largest block the kernel allows (launchShape).
var gpuShapes = [][2]int{{256, 0}, {32, 1}, {128, 3}, {1024, 0}, {64, 2}}

// TestGPUMatchesGo checks the PTX kernel of every shipped optimizer against
// the generated Go reference, bit for bit, after every step: the sizes,
// noise settings, misaligned buffers and global offsets of the host kernel
// test, under several launch shapes.
func TestGPUMatchesGo(t *testing.T) { checkPTXKernels(t, gpuRun(t)) }

// TestPTXSimMatchesGo is TestGPUMatchesGo on the simulator.
func TestPTXSimMatchesGo(t *testing.T) {
	run, _ := simRun(t, cudasim.Config{})
	checkPTXKernels(t, run)
}

func checkPTXKernels(t *testing.T, run ptxRun) {
	for _, opt := range optimizers {
		t.Run(opt.name, func(t *testing.T) {
			if opt.narrow(t) {
				t.Skip("16-bit states: TestStorageShipped runs its PTX on typed memory")
			}
			if run.parallel {
				t.Parallel()
			}
			k := loadGPUKernel(t, run.ctx, opt)
			for i, c := range run.cases {
				t.Run(c.String(), func(t *testing.T) { checkGPUKernel(t, opt, k, c, run.steps, gpuShapes[i%len(gpuShapes)]) })
			}
		})
	}
}

func checkGPUKernel(t *testing.T, opt *optimizer, k *gpuKernel, c kernelCase, steps int, shape [2]int) {
	if err := runGPUKernel(t, opt, k, c, steps, shape); err != nil {
		t.Fatal(err)
	}
}

// runGPUKernel runs steps steps of case c through the Go reference and the
// kernel and returns how they first differ, or how the kernel failed, or
// what it wrote outside its n floats (canaries).
func runGPUKernel(t *testing.T, opt *optimizer, k *gpuKernel, c kernelCase, steps int, shape [2]int) error {
	ref := caseRef(t, opt, c)
	want, got := kernelBuffers(t, opt, c)
	dev := deviceBuffers(t, k.ctx, got, c.skew)
	r := rand.New(rand.NewPCG(uint64(c.n), uint64(c.offset)))
	for step := range steps {
		c.gradient(r, want[1], step)
		if err := k.ctx.CopyHtoD(dev[1], want[1]); err != nil {
			t.Fatal(err)
		}
		sigmaW2 := c.sigmaW2(step)
		s, scalars := ref.scalars(step, sigmaW2)
		rg := c.rangeAt(step)
		ref.run(s, rg, want)
		if err := k.launch(t, dev, scalars, c.n, rg, shape); err != nil {
			return fmt.Errorf("step %d (block %d, grid %d): %w", step, shape[0], shape[1], err)
		}
		readBuffers(t, k.ctx, dev, got)
		if msg := compareBuffers(opt, want, got); msg != "" {
			return fmt.Errorf("step %d (block %d, grid %d): %s", step, shape[0], shape[1], msg)
		}
	}
	return canariesIntact(t, k.ctx, dev, got, c.skew)
}

// readBuffers copies each device buffer into its host buffer.
func readBuffers(t *testing.T, ctx *cudadrv.Context, dev []cudadrv.DevicePtr, host [][]float32) {
	t.Helper()
	for b := range host {
		if err := ctx.CopyDtoH(host[b], dev[b]); err != nil {
			t.Fatal(err)
		}
	}
}

// gpuPrivatize is one optimizer's privatize kernels (norms, scales, sum),
// loaded from the checked-in PTX.
type gpuPrivatize struct {
	ctx *cudadrv.Context
	fns []*cudadrv.Function
}

func loadGPUPrivatize(t *testing.T, ctx *cudadrv.Context, name string) *gpuPrivatize {
	t.Helper()
	fns := loadGPUFunctions(t, ctx, name, name+"_privatize_norms", name+"_privatize_scales", name+"_privatize_sum")
	return &gpuPrivatize{ctx: ctx, fns: fns}
}

// launch runs kernel i over threads threads with the launch shape (block,
// grid; grid 0: enough blocks for every thread) and waits for it.
func (k *gpuPrivatize) launch(t *testing.T, i, threads int, shape [2]int, args ...any) error {
	grid, block := launchShape(t, k.ctx, k.fns[i], shape, threads)
	if err := k.fns[i].Launch(grid, block, 0, args...); err != nil {
		return err
	}
	return k.ctx.Synchronize()
}

// TestGPUPrivatizeMatchesGo checks the privatize kernels of optimizers with
// and without a two-point observation against the generated Go reference,
// bit for bit — the partials, the scales and the clipped sum over the
// divisor — on the cases of the host test, k ≠ B and misaligned buffers
// among them, under several launch shapes (the block a multiple of the
// warp).
func TestGPUPrivatizeMatchesGo(t *testing.T) { checkPTXPrivatize(t, gpuRun(t)) }

// TestPTXSimPrivatizeMatchesGo is TestGPUPrivatizeMatchesGo on the
// simulator.
func TestPTXSimPrivatizeMatchesGo(t *testing.T) {
	run, _ := simRun(t, cudasim.Config{})
	checkPTXPrivatize(t, run)
}

func checkPTXPrivatize(t *testing.T, run ptxRun) {
	for _, opt := range optimizers {
		name, ref := opt.name, opt.pkg.priv
		t.Run(name, func(t *testing.T) {
			k := loadGPUPrivatize(t, run.ctx, name)
			for i, c := range run.privCases(name) {
				t.Run(c.String(), func(t *testing.T) { checkGPUPrivatize(t, ref, k, c, gpuShapes[i%len(gpuShapes)]) })
			}
		})
	}
}

func checkGPUPrivatize(t *testing.T, ref privRef, k *gpuPrivatize, c privCase, shape [2]int) {
	scales, out, err := runGPUPrivatize(t, ref, k, c, shape)
	if err != nil {
		t.Fatal(err)
	}
	checkClipped(t, c, scales)
	checkNoExamples(t, c, out)
}

// runGPUPrivatize runs case c through the Go reference and the three
// kernels and returns the kernels' scales and clipped sum, or how the
// partials, the scales or the sums first differ (comparePrivatize), or how
// a kernel failed.
func runGPUPrivatize(t *testing.T, ref privRef, k *gpuPrivatize, c privCase, shape [2]int) (scales, out []float32, err error) {
	cur, look := privInputs(c)
	mode, a32, b32, one, two := privMode(c, cur, look)
	nchunks := reduce.ReduceChunks(c.n)
	want := privOutputs(c)
	ref.norms(want.partials, one, two, c.n, a32, b32, 0, c.batch*nchunks)
	ref.scales(want.scales, want.partials, nchunks, privClip, 0, c.batch)
	ref.sum(want.out, one, two, want.scales, c.n, a32, b32, c.divisor(), 0, c.n)
	got := privOutputs(c)
	in := [][]float32{one, two}
	if two == nil {
		in = in[:1]
	}
	dev := deviceBuffers(t, k.ctx, append(in, got.partials, got.scales, got.out), c.skew)
	var lookPtr cudadrv.DevicePtr
	if two != nil {
		lookPtr = dev[1]
	}
	p, s, o := dev[len(dev)-3], dev[len(dev)-2], dev[len(dev)-1]
	B, n := int64(c.batch), int64(c.n)
	for _, l := range []struct {
		kernel, threads int
		args            []any
	}{
		{0, 32 * c.batch * nchunks, []any{dev[0], lookPtr, p, B, n, a32, b32, mode}},
		{1, c.batch, []any{p, s, B, int64(nchunks), float64(privClip)}},
		{2, c.n/4 + 4, []any{dev[0], lookPtr, s, o, B, n, a32, b32, c.divisor(), mode}},
	} {
		if err := k.launch(t, l.kernel, l.threads, shape, l.args...); err != nil {
			return nil, nil, fmt.Errorf("block %d, grid %d: %w", shape[0], shape[1], err)
		}
	}
	for _, b := range []struct {
		ptr cudadrv.DevicePtr
		got []float32
	}{{p, got.partials}, {s, got.scales}, {o, got.out}} {
		if len(b.got) > 0 {
			if err := k.ctx.CopyDtoH(b.got, b.ptr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := comparePrivatize(c, want, got); err != nil {
		return nil, nil, fmt.Errorf("block %d, grid %d: %w", shape[0], shape[1], err)
	}
	return got.scales, got.out, canariesIntact(t, k.ctx, dev, append(in, got.partials, got.scales, got.out), c.skew)
}
