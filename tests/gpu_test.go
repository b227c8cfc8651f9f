package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

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
	ptx, err := os.ReadFile(repoPath("generated", opt.name, opt.name+".ptx"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Unload() })
	fn, err := mod.Function(opt.name + "_step")
	if err != nil {
		t.Fatal(err)
	}
	return &gpuKernel{ctx: ctx, fn: fn, sms: ctx.Device().SMCount}
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
