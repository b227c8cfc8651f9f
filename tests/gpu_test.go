package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/cudadrv"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// The GPU check. It needs no Go toolchain on the GPU host: build it with
//
//	CGO_ENABLED=0 go test -c -o gpu.test ./tests
//
// copy the binary and the repository's generated/ there, and run it from
// tests/ (cd tests && ../gpu.test -test.run GPU -test.v). Without a CUDA
// driver it skips, unless FIBERGEN_REQUIRE_CUDA=1 makes that a failure.

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
	dev, err := drv.Device(0)
	if err != nil {
		skip(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	version, _ := drv.Version()
	t.Logf("device %s, driver API %d", dev, version)
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// gpuKernel is one optimizer's step kernel, loaded from the checked-in PTX.
type gpuKernel struct {
	ctx *cudadrv.Context
	fn  *cudadrv.Function
	sms int
}

func loadGPUKernel(t *testing.T, ctx *cudadrv.Context, opt *optimizer) *gpuKernel {
	t.Helper()
	fns := loadGPUFunctions(t, ctx, opt.name, opt.name+"_step")
	return &gpuKernel{ctx: ctx, fn: fns[0], sms: ctx.Device().SMCount}
}

// loadGPUFunctions loads generated/<name>/<name>.ptx once and returns its
// functions of the given symbols; the module is unloaded when t ends.
func loadGPUFunctions(t *testing.T, ctx *cudadrv.Context, name string, symbols ...string) []*cudadrv.Function {
	t.Helper()
	ptx, err := os.ReadFile(repoPath("generated", name, name+".ptx"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Unload() })
	var fns []*cudadrv.Function
	for _, sym := range symbols {
		fn, err := mod.Function(sym)
		if err != nil {
			t.Fatal(err)
		}
		fns = append(fns, fn)
	}
	return fns
}

// launch runs the kernel over the device buffers ptrs (n coordinates each)
// with the launch shape block × grid (grid 0: enough for every group).
func (k *gpuKernel) launch(ptrs []cudadrv.DevicePtr, scalars []float32, n int, rg hostkernel.Range, block, grid int) error {
	var args []any
	for _, p := range ptrs {
		args = append(args, p)
	}
	for _, s := range scalars {
		args = append(args, s)
	}
	args = append(args, int64(n), rg.Offset, rg.Seed, rg.Step, rg.Noise)
	if grid == 0 {
		grid = cudadrv.GridFor(n/4+4, block, k.sms)
	}
	if err := k.fn.Launch([3]uint32{uint32(grid), 1, 1}, [3]uint32{uint32(block), 1, 1}, 0, args...); err != nil {
		return err
	}
	return k.ctx.Synchronize()
}

// deviceBuffers allocates one device buffer per host buffer, skew floats
// into its allocation, and copies the host values there.
func deviceBuffers(t *testing.T, ctx *cudadrv.Context, host [][]float32, skew int) []cudadrv.DevicePtr {
	t.Helper()
	var ptrs []cudadrv.DevicePtr
	for _, h := range host {
		base, err := ctx.Alloc(4 * (len(h) + skew + 4))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctx.Free(base) })
		p := base.Add(4 * skew)
		if len(h) > 0 {
			if err := ctx.CopyHtoD(p, h); err != nil {
				t.Fatal(err)
			}
		}
		ptrs = append(ptrs, p)
	}
	return ptrs
}

// gpuShapes are the launch shapes (block, grid; grid 0: as many as needed)
// the cases cycle through: the noise must not depend on them.
var gpuShapes = [][2]int{{256, 0}, {32, 1}, {128, 3}, {1024, 0}}

// TestGPUMatchesGo checks the PTX kernel of every shipped optimizer against
// the generated Go reference, bit for bit, after every step: the sizes,
// noise settings, misaligned buffers and global offsets of the host kernel
// test, under several launch shapes.
func TestGPUMatchesGo(t *testing.T) {
	ctx := gpuContext(t)
	for _, opt := range optimizers {
		t.Run(opt.name, func(t *testing.T) {
			k := loadGPUKernel(t, ctx, opt)
			for i, c := range kernelCases() {
				t.Run(c.String(), func(t *testing.T) { checkGPUKernel(t, opt, k, c, gpuShapes[i%len(gpuShapes)]) })
			}
		})
	}
}

func checkGPUKernel(t *testing.T, opt *optimizer, k *gpuKernel, c kernelCase, shape [2]int) {
	ref, err := newGoRef(opt.pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, got := kernelBuffers(opt, c)
	dev := deviceBuffers(t, k.ctx, got, c.skew)
	r := rand.New(rand.NewPCG(uint64(c.n), uint64(c.offset)))
	for step := range kernelSteps {
		fillGradient(r, want[1], step)
		if c.n > 0 {
			if err := k.ctx.CopyHtoD(dev[1], want[1]); err != nil {
				t.Fatal(err)
			}
		}
		sigmaW2 := 1e-4 * float64(step%3)
		s, scalars := ref.scalars(step, sigmaW2)
		rg := hostkernel.Range{Hi: int64(c.n), Offset: c.offset, Seed: 0x5eed ^ uint64(c.n), Step: uint32(step)}
		if c.noise {
			rg.Noise = 1
		}
		ref.run(s, rg, want)
		if err := k.launch(dev, scalars, c.n, rg, shape[0], shape[1]); err != nil {
			t.Fatal(err)
		}
		for b := range got {
			if c.n > 0 {
				if err := k.ctx.CopyDtoH(got[b], dev[b]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if msg := compareBuffers(opt, want, got); msg != "" {
			t.Fatalf("step %d (block %d, grid %d): %s", step, shape[0], shape[1], msg)
		}
	}
}

// gpuPrivatize is one optimizer's privatize kernels (norms, scales, sum),
// loaded from the checked-in PTX.
type gpuPrivatize struct {
	ctx *cudadrv.Context
	fns []*cudadrv.Function
	sms int
}

func loadGPUPrivatize(t *testing.T, ctx *cudadrv.Context, name string) *gpuPrivatize {
	t.Helper()
	fns := loadGPUFunctions(t, ctx, name, name+"_privatize_norms", name+"_privatize_scales", name+"_privatize_sum")
	return &gpuPrivatize{ctx: ctx, fns: fns, sms: ctx.Device().SMCount}
}

// launch runs kernel i over threads threads in blocks of block (grid 0:
// enough blocks for every thread) and waits for it.
func (k *gpuPrivatize) launch(i, threads, block, grid int, args ...any) error {
	if grid == 0 {
		grid = cudadrv.GridFor(threads, block, k.sms)
	}
	if err := k.fns[i].Launch([3]uint32{uint32(grid), 1, 1}, [3]uint32{uint32(block), 1, 1}, 0, args...); err != nil {
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
func TestGPUPrivatizeMatchesGo(t *testing.T) {
	ctx := gpuContext(t)
	for name, ref := range privRefs {
		t.Run(name, func(t *testing.T) {
			k := loadGPUPrivatize(t, ctx, name)
			for i, c := range privCases() {
				if name == "dp_sgd" && !math.IsNaN(c.a) {
					continue
				}
				t.Run(c.String(), func(t *testing.T) { checkGPUPrivatize(t, ref, k, c, gpuShapes[i%len(gpuShapes)]) })
			}
		})
	}
}

func checkGPUPrivatize(t *testing.T, ref privRef, k *gpuPrivatize, c privCase, shape [2]int) {
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
		if err := k.launch(l.kernel, l.threads, shape[0], shape[1], l.args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct {
		name      string
		ptr       cudadrv.DevicePtr
		want, got []float32
	}{{"partials", p, want.partials, got.partials}, {"scales", s, want.scales, got.scales}, {"out", o, want.out, got.out}} {
		if len(b.got) > 0 {
			if err := k.ctx.CopyDtoH(b.got, b.ptr); err != nil {
				t.Fatal(err)
			}
		}
		if i := firstBitDiff(b.want, b.got); i >= 0 {
			t.Fatalf("block %d, grid %d: %s differ first at %d: Go %v (%#08x), GPU %v (%#08x)", shape[0], shape[1],
				b.name, i, b.want[i], math.Float32bits(b.want[i]), b.got[i], math.Float32bits(b.got[i]))
		}
	}
	checkNoExamples(t, c, got.out)
}
