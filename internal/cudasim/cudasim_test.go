package cudasim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// scalePTX is y[i] = a·x[i] over a grid-stride loop, from a block of any
// size: scale(float *x, float *y, float a, u64 n).
const scalePTX = `.version 7.0
.target sm_80
.address_size 64
.visible .entry scale(.param .u64 x, .param .u64 y, .param .f32 a, .param .u64 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<5>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<9>;
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	ld.param.f32 %f1, [a];
	ld.param.u64 %rd3, [n];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %nctaid.x;
	mul.wide.u32 %rd4, %r1, %r2;
	cvt.u64.u32 %rd5, %r3;
	add.s64 %rd4, %rd4, %rd5;
	mul.wide.u32 %rd6, %r4, %r2;
LOOP:
	setp.ge.u64 %p1, %rd4, %rd3;
	@%p1 bra DONE;
	shl.b64 %rd7, %rd4, 2;
	add.s64 %rd8, %rd1, %rd7;
	ld.global.nc.f32 %f2, [%rd8];
	mul.rn.f32 %f2, %f2, %f1;
	add.s64 %rd8, %rd2, %rd7;
	st.global.f32 [%rd8], %f2;
	add.s64 %rd4, %rd4, %rd6;
	bra.uni LOOP;
DONE:
	ret;
}
`

func open(t *testing.T, cfg cudasim.Config) (*cudasim.Sim, *cudadrv.Context) {
	t.Helper()
	sim, drv, err := cudasim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !cudasim.Simulated(drv) {
		t.Error("the simulator's driver is not Simulated")
	}
	dev, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return sim, ctx
}

// TestDriver drives the simulated device through cudadrv as a program
// drives a GPU: device properties, memory, a module, launches of several
// shapes, the launch-shape limit, timing.
func TestDriver(t *testing.T) {
	sim, ctx := open(t, cudasim.Config{SMs: 2, MaxThreadsPerBlock: 256})
	if d := ctx.Device(); d.Arch() != "sm_90" || d.SMCount != 2 {
		t.Errorf("device %s", d)
	}
	const n = 1000
	x, _ := ctx.Alloc(4 * n)
	y, _ := ctx.Alloc(4 * n)
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i) - 500
	}
	if err := ctx.CopyHtoD(x, host); err != nil {
		t.Fatal(err)
	}
	mod, err := ctx.LoadModule([]byte(scalePTX))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("scale")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fn.BlockFor(1024); b != 256 || err != nil {
		t.Errorf("BlockFor(1024) = %d, %v; want 256", b, err)
	}
	for _, shape := range [][2]uint32{{1, 32}, {3, 64}, {4, 256}} {
		ms, err := ctx.Time(func() error {
			return fn.Launch([3]uint32{shape[0]}, [3]uint32{shape[1]}, 0, x, y, float32(0.5), uint64(n))
		})
		if err != nil {
			t.Fatalf("grid %d block %d: %v", shape[0], shape[1], err)
		}
		got := make([]float32, n)
		if err := ctx.CopyDtoH(got, y); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != host[i]*0.5 {
				t.Fatalf("grid %d block %d: y[%d] = %v, want %v", shape[0], shape[1], i, got[i], host[i]*0.5)
			}
		}
		t.Logf("grid %d block %d: %.2f ms", shape[0], shape[1], ms)
	}
	err = fn.Launch([3]uint32{1}, [3]uint32{512}, 0, x, y, float32(1), uint64(n))
	if !errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeLaunchOutOfResources}) {
		t.Errorf("a block of 512 on a kernel of 256 at most: %v", err)
	}
	if st, _ := sim.Stats(); st.Threads != 32+3*64+4*256 {
		t.Errorf("%d threads launched", st.Threads)
	}
	free, total, err := ctx.MemInfo()
	if err != nil || total-free != 8*n {
		t.Errorf("MemInfo: %d free of %d (%v), want %d in use", free, total, err, 8*n)
	}
}

// TestDriverErrors: PTX the simulator cannot run does not load, with the
// reason in the JIT log; a kernel's fault is sticky, as on a GPU, until
// the primary context's last retain is released.
func TestDriverErrors(t *testing.T) {
	_, ctx := open(t, cudasim.Config{})
	_, err := ctx.LoadModule([]byte(strings.Replace(scalePTX, "mul.rn.f32", "mul.f32", 1)))
	var e *cudadrv.Error
	if !errors.As(err, &e) || e.Code != cudadrv.CodeInvalidPTX || !strings.Contains(e.Log, "28:2: mul.f32: only the IEEE round-to-nearest form .rn") {
		t.Errorf("LoadModule of mul.f32: %v", err)
	}
	mod, err := ctx.LoadModule([]byte(scalePTX))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Function("nope"); !errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeNotFound}) {
		t.Errorf("Function(nope): %v", err)
	}
	fn, _ := mod.Function("scale")
	x, _ := ctx.Alloc(16)
	y, _ := ctx.Alloc(32)
	// n = 8 over 4 floats of x: thread 4's load faults.
	if err := fn.Launch([3]uint32{1}, [3]uint32{32}, 0, x, y, float32(1), uint64(8)); err != nil {
		t.Fatal(err)
	}
	err = ctx.Synchronize()
	if !errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeIllegalAddress}) || !strings.Contains(err.Error(), "thread [4 0 0]: 4 bytes at 0x10000000010 are outside every allocation") {
		t.Errorf("Synchronize after a fault: %v", err)
	}
	if _, err := ctx.Alloc(4); !errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeIllegalAddress}) {
		t.Errorf("Alloc after a fault: %v", err)
	}
	ctx.Close()
	drvCtx, err := ctx.Device().Context()
	if err != nil {
		t.Fatal(err)
	}
	defer drvCtx.Close()
	if _, err := drvCtx.Alloc(4); err != nil {
		t.Errorf("Alloc in a new primary context: %v", err)
	}
}

// TestDriverLimits: a thread past its instruction budget fails the launch
// with CUDA_ERROR_LAUNCH_TIMEOUT; an unloaded module's functions, events
// never recorded and allocations past the device's memory are refused.
func TestDriverLimits(t *testing.T) {
	_, ctx := open(t, cudasim.Config{Instructions: 100})
	mod, err := ctx.LoadModule([]byte(scalePTX))
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("scale")
	x, _ := ctx.Alloc(4 * 64)
	if err := fn.Launch([3]uint32{1}, [3]uint32{1}, 0, x, x.Add(0), float32(1), uint64(0)); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatalf("an empty loop: %v", err)
	}
	if _, err := ctx.Alloc(17 << 30); !errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeOutOfMemory}) {
		t.Errorf("Alloc of 17 GiB: %v", err)
	}
	if _, err := ctx.NewTimer(); err != nil {
		t.Fatal(err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
	mod2, _ := ctx.LoadModule([]byte(scalePTX))
	fn2, _ := mod2.Function("scale")
	y, _ := ctx.Alloc(4 * 64)
	// 64 coordinates on one thread: past 100 instructions.
	if err := fn2.Launch([3]uint32{1}, [3]uint32{1}, 0, x, y, float32(1), uint64(64)); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); !errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeLaunchTimeout}) || !strings.Contains(err.Error(), "budget of 100 instructions") {
		t.Errorf("Synchronize after a launch past its budget: %v", err)
	}
}
