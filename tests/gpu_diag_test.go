package tests

import (
	"math/rand/v2"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// TestGPUClampMass checks the PTX kernel <name>_clamp_mass of every shipped
// optimizer that declares clamp_mass (diagNames) against the generated Go reference,
// bit for bit, at the sizes of the host test and under several launch
// shapes (the chunks go to warps in turn, so the shape must not matter).
// Like TestGPUMatchesGo it skips without a CUDA driver.
func TestGPUClampMass(t *testing.T) { checkPTXClampMass(t, gpuRun(t)) }

// TestPTXSimClampMass is TestGPUClampMass on the simulator.
func TestPTXSimClampMass(t *testing.T) {
	run, _ := simRun(t, cudasim.Config{})
	checkPTXClampMass(t, run)
}

func checkPTXClampMass(t *testing.T, run ptxRun) {
	ctx := run.ctx
	for _, name := range diagNames() {
		t.Run(name, func(t *testing.T) {
			if optimizerNamed(name).narrow(t) {
				t.Skip("16-bit states: TestStorageShipped runs its clamp_mass on typed memory")
			}
			d := newDiagTarget(t, name, 3, 1e-8)
			fn := loadGPUFunctions(t, ctx, name, d.man.Kernels.Diagnostics[0].Kernel)[0]
			r := rand.New(rand.NewPCG(11, uint64(len(name))))
			for i, n := range run.diagSizes {
				checkGPUClampMass(t, ctx, d, fn, r, n, gpuShapes[i%len(gpuShapes)])
			}
		})
	}
}

func checkGPUClampMass(t *testing.T, ctx *cudadrv.Context, d *diagTarget, fn *cudadrv.Function, r *rand.Rand, n int, shape [2]int) {
	t.Helper()
	if err := runGPUClampMass(t, ctx, d, fn, r, n, shape); err != nil {
		t.Fatal(err)
	}
}

// runGPUClampMass runs clamp_mass over n random coordinates on the Go
// reference and the kernel fn and returns how their partial sums first
// differ, or how the kernel failed.
func runGPUClampMass(t *testing.T, ctx *cudadrv.Context, d *diagTarget, fn *cudadrv.Function, r *rand.Rand, n int, shape [2]int) error {
	t.Helper()
	bufs := diagBuffers(r, d.nbuf, n)
	c := reduce.ReduceChunks(n)
	want := [2][]float32{make([]float32, c), make([]float32, c)}
	d.goPartials(bufs, want[0], want[1])
	if c == 0 {
		return nil
	}
	dev := deviceBuffers(t, ctx, bufs, n%3)
	out := deviceBuffers(t, ctx, [][]float32{make([]float32, c), make([]float32, c)}, 0)
	var args []any
	for _, p := range dev {
		args = append(args, p)
	}
	for _, s := range d.kernelS {
		args = append(args, s)
	}
	args = append(args, int64(n), out[0], out[1])
	grid, block := launchShape(t, ctx, fn, shape, 32*c)
	if err := fn.Launch(grid, block, 0, args...); err != nil {
		return err
	}
	if err := ctx.Synchronize(); err != nil {
		return err
	}
	got := [2][]float32{make([]float32, c), make([]float32, c)}
	for s := range got {
		if err := ctx.CopyDtoH(got[s], out[s]); err != nil {
			t.Fatal(err)
		}
	}
	return diffPartials(want, got)
}
