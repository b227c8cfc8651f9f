package cudadrv

import (
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// requireEnv, when set to 1, turns the skips of the tests that need a driver
// and a device into failures: set it where a GPU is expected, so that a
// broken driver setup does not pass as a skipped test.
const requireEnv = "FIBERGEN_REQUIRE_CUDA"

// skipOrFail skips the test for a missing driver or device, or fails it when
// requireEnv is set.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// loadDriver returns the driver, or skips the test when there is none.
func loadDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := Load()
	if err != nil {
		skipOrFail(t, "CUDA driver not usable: %v", err)
	}
	return d
}

// newContext returns the primary context of device 0, closed when the test
// ends, or skips the test when there is no driver or device.
func newContext(t *testing.T) *Context {
	t.Helper()
	d := loadDriver(t)
	n, err := d.DeviceCount()
	if err != nil {
		t.Fatalf("DeviceCount: %v", err)
	}
	if n == 0 {
		skipOrFail(t, "no CUDA device")
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatalf("Device(0): %v", err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatalf("Context: %v", err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ctx
}

// addScalarPTX is add_scalar(float* x, float a, unsigned n): x[i] += a for
// every i < n, in a grid-stride loop, so that any grid covers all of x.
const addScalarPTX = `
.version 7.0
.target sm_80
.address_size 64

.visible .entry add_scalar(
	.param .u64 add_scalar_x,
	.param .f32 add_scalar_a,
	.param .u32 add_scalar_n
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [add_scalar_x];
	ld.param.f32 	%f1, [add_scalar_a];
	ld.param.u32 	%r1, [add_scalar_n];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	mov.u32 	%r6, %nctaid.x;
	mul.lo.s32 	%r7, %r6, %r3;
$L_loop:
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L_done;
	mul.wide.u32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	add.rn.f32 	%f3, %f2, %f1;
	st.global.f32 	[%rd4], %f3;
	add.s32 	%r5, %r5, %r7;
	bra.uni 	$L_loop;
$L_done:
	ret;
}
`

// badPTX has a valid header and a body the JIT compiler must reject.
const badPTX = `
.version 7.0
.target sm_80
.address_size 64

.visible .entry broken(
	.param .u64 broken_x
)
{
	this_is_not_an_instruction %r1, 42;
	ret;
}
`

// --- Tests that need no driver. ---

func TestErrorFormat(t *testing.T) {
	e := &Error{Call: "cuModuleLoadData", Code: 218, Name: "CUDA_ERROR_INVALID_PTX", Message: "a PTX JIT compilation failed"}
	if got, want := e.Error(), "cuda: cuModuleLoadData: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e.Log = "ptxas application ptx input, line 11; error   : Unknown instruction\n"
	if got, want := e.Error(), "cuda: cuModuleLoadData: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)\nJIT error log:\nptxas application ptx input, line 11; error   : Unknown instruction"; got != want {
		t.Errorf("Error() with log = %q, want %q", got, want)
	}
	if got, want := (&Error{Call: "cuInit", Code: 999}).Error(), "cuda: cuInit: CUresult 999"; got != want {
		t.Errorf("Error() without name = %q, want %q", got, want)
	}
	var err error = &Error{Call: "cuMemAlloc_v2", Code: CodeOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	if !errors.Is(err, &Error{Code: CodeOutOfMemory}) {
		t.Errorf("errors.Is by code failed")
	}
	if errors.Is(err, &Error{Code: CodeInvalidValue}) {
		t.Errorf("errors.Is matched a different code")
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != 2 {
		t.Errorf("errors.As failed")
	}
}

func TestJITLog(t *testing.T) {
	buf := make([]byte, 32)
	copy(buf, "line 3: error\n\x00garbage")
	if got := jitLog(buf, 14); got != "line 3: error" {
		t.Errorf("jitLog(filled 14) = %q", got)
	}
	// A filled size the driver wrote as a 32-bit value in a 64-bit slot,
	// with junk above, and one past the buffer: cut at the NUL anyway.
	junk := uint64(0xdeadbeef_0000000e) // truncated on 32-bit platforms
	if got := jitLog(buf, uintptr(junk)); got != "line 3: error" {
		t.Errorf("jitLog(junk high bits) = %q", got)
	}
	if got := jitLog(buf, 1000); got != "line 3: error" {
		t.Errorf("jitLog(too large) = %q", got)
	}
	if got := jitLog(make([]byte, 8), 0); got != "" {
		t.Errorf("jitLog(empty) = %q", got)
	}
}

func TestMarshalArgs(t *testing.T) {
	cells, err := marshalArgs([]any{DevicePtr(0x7f0012345600), float32(1.5), float64(-2.25), int32(-7), uint32(0xfffffffe), int64(-1 << 40), uint64(1 << 63)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 7 {
		t.Fatalf("%d cells", len(cells))
	}
	for i := range cells {
		if a := uintptr(unsafe.Pointer(&cells[i])); a%8 != 0 {
			t.Errorf("cell %d at %#x is not 8-byte aligned", i, a)
		}
	}
	if v := *(*uint64)(unsafe.Pointer(&cells[0])); v != 0x7f0012345600 {
		t.Errorf("DevicePtr cell = %#x", v)
	}
	if v := *(*float32)(unsafe.Pointer(&cells[1])); v != 1.5 {
		t.Errorf("float32 cell = %v", v)
	}
	if v := *(*float64)(unsafe.Pointer(&cells[2])); v != -2.25 {
		t.Errorf("float64 cell = %v", v)
	}
	if v := *(*int32)(unsafe.Pointer(&cells[3])); v != -7 {
		t.Errorf("int32 cell = %v", v)
	}
	if v := *(*uint32)(unsafe.Pointer(&cells[4])); v != 0xfffffffe {
		t.Errorf("uint32 cell = %#x", v)
	}
	if v := *(*int64)(unsafe.Pointer(&cells[5])); v != -1<<40 {
		t.Errorf("int64 cell = %v", v)
	}
	if v := *(*uint64)(unsafe.Pointer(&cells[6])); v != 1<<63 {
		t.Errorf("uint64 cell = %#x", v)
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		// Little-endian: a 4-byte value is the low half of its cell.
		if cells[1] != uint64(math.Float32bits(1.5)) {
			t.Errorf("float32 cell = %#x", cells[1])
		}
	}

	if cells, err := marshalArgs(nil); err != nil || len(cells) != 0 {
		t.Errorf("marshalArgs(nil) = %v, %v", cells, err)
	}

	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{DevicePtr(1), 3}, "kernel argument 1 has unsupported type int"},
		{[]any{float32(1), int32(2), "x"}, "kernel argument 2 has unsupported type string"},
		{[]any{[]float32{1}}, "kernel argument 0 has unsupported type []float32"},
		{[]any{nil}, "kernel argument 0 has unsupported type <nil>"},
		{[]any{int16(1)}, "kernel argument 0 has unsupported type int16"},
		{[]any{new(float32)}, "kernel argument 0 has unsupported type *float32"},
	} {
		_, err := marshalArgs(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("marshalArgs(%#v) error = %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestGridFor(t *testing.T) {
	for _, tc := range []struct{ n, block, sms, want int }{
		{0, 256, 132, 1},
		{-5, 256, 132, 1},
		{1, 256, 132, 1},
		{256, 256, 132, 1},
		{257, 256, 132, 2},
		{1000, 256, 132, 4},
		{1 << 20, 256, 132, 4096},
		{1 << 30, 256, 132, 32 * 132},
		{1 << 30, 256, 0, 1 << 22},
		{10, 0, 132, 10},
		{math.MaxInt, 1, 0, 1<<31 - 1},
	} {
		if got := GridFor(tc.n, tc.block, tc.sms); got != tc.want {
			t.Errorf("GridFor(%d, %d, %d) = %d, want %d", tc.n, tc.block, tc.sms, got, tc.want)
		}
	}
}

func TestDevicePtrAdd(t *testing.T) {
	p := DevicePtr(0x7f0000001000)
	if got := p.Add(256); got != 0x7f0000001100 {
		t.Errorf("Add(256) = %#x", got)
	}
	if got := p.Add(256).Add(-256); got != p {
		t.Errorf("Add(256).Add(-256) = %#x", got)
	}
}

// TestBindSignatures binds every driver entry point to a dummy address, so
// that a Go function type purego cannot marshal (or a function with too many
// arguments) shows up here rather than on the first machine with a GPU. No
// function is called.
func TestBindSignatures(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the loader is linux only")
	}
	var d Driver
	d.libName = "fake"
	var dummy byte
	addr := uintptr(unsafe.Pointer(&dummy))
	if err := d.bind(func(string) (uintptr, error) { return addr, nil }); err != nil {
		t.Fatal(err)
	}
	if d.cuLaunchKernel == nil || d.cuModuleLoadDataEx == nil || d.cuEventElapsedTime == nil {
		t.Fatal("functions left unbound")
	}
	if d.elapsedName != "cuEventElapsedTime_v2" || d.moduleLoadName != "cuModuleLoadDataEx" {
		t.Errorf("bound %s, %s", d.elapsedName, d.moduleLoadName)
	}

	// Without the optional and the _v2 symbols: fall back.
	var d2 Driver
	d2.libName = "fake"
	err := d2.bind(func(name string) (uintptr, error) {
		if name == "cuEventElapsedTime_v2" || name == "cuModuleLoadDataEx" {
			return 0, errors.New("undefined symbol: " + name)
		}
		return addr, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d2.elapsedName != "cuEventElapsedTime" || d2.cuModuleLoadDataEx != nil || d2.moduleLoadName != "cuModuleLoadData" {
		t.Errorf("fallbacks: bound %s, %s", d2.elapsedName, d2.moduleLoadName)
	}

	// A required symbol missing: an error naming it.
	var d3 Driver
	d3.libName = "libcuda.so.1"
	err = d3.bind(func(name string) (uintptr, error) {
		if name == "cuLaunchKernel" {
			return 0, errors.New("undefined symbol: cuLaunchKernel")
		}
		return addr, nil
	})
	if err == nil || !strings.Contains(err.Error(), "libcuda.so.1 lacks cuLaunchKernel") {
		t.Errorf("missing symbol error = %v", err)
	}
}

// --- Tests that need a driver and a device. ---

func TestDeviceInfo(t *testing.T) {
	d := loadDriver(t)
	v, err := d.Version()
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s, CUDA %d.%d, %d device(s)", d.Library(), v/1000, v%1000/10, n)
	if n == 0 {
		skipOrFail(t, "no CUDA device")
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device 0: %v", dev)
	if dev.Name == "" || dev.Major < 1 || dev.SMCount < 1 || dev.TotalMem <= 0 {
		t.Errorf("implausible device: %+v", dev)
	}
	warp, err := dev.Attribute(AttrWarpSize)
	if err != nil {
		t.Fatal(err)
	}
	if warp != 32 {
		t.Errorf("warp size %d", warp)
	}
	if _, err := d.Device(n); err == nil {
		t.Errorf("Device(%d) of %d succeeded", n, n)
	} else {
		t.Logf("Device(%d): %v", n, err)
	}
}

func TestCopyRoundTrip(t *testing.T) {
	ctx := newContext(t)
	const n = 1<<20 + 3
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i)*0.5 - 1000
	}
	p, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)
	if err := ctx.CopyHtoD(p, host); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, n)
	if err := ctx.CopyDtoH(back, p); err != nil {
		t.Fatal(err)
	}
	for i := range host {
		if back[i] != host[i] {
			t.Fatalf("back[%d] = %v, want %v", i, back[i], host[i])
		}
	}

	// Device-to-device into the second half of a buffer twice as large,
	// then a shard read back through DevicePtr.Add.
	q, err := ctx.Alloc(8 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(q)
	if err := ctx.MemsetD32(q, math.Float32bits(7), 2*n); err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyDtoD(q.Add(4*n), p, 4*n); err != nil {
		t.Fatal(err)
	}
	both := make([]float32, 2*n)
	if err := ctx.CopyDtoH(both, q); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if both[i] != 7 || both[n+i] != host[i] {
			t.Fatalf("at %d: %v, %v; want 7, %v", i, both[i], both[n+i], host[i])
		}
	}
	shard := make([]float32, 10)
	if err := ctx.CopyDtoH(shard, p.Add(4*100)); err != nil {
		t.Fatal(err)
	}
	for i, v := range shard {
		if v != host[100+i] {
			t.Fatalf("shard[%d] = %v, want %v", i, v, host[100+i])
		}
	}

	// The byte and generic variants.
	bs := []byte("hello, device")
	if err := ctx.CopyBytesHtoD(p, bs); err != nil {
		t.Fatal(err)
	}
	bb := make([]byte, len(bs))
	if err := ctx.CopyBytesDtoH(bb, p); err != nil {
		t.Fatal(err)
	}
	if string(bb) != string(bs) {
		t.Errorf("bytes back %q", bb)
	}
	is := []int32{-1, 2, -3, 4}
	if err := CopyToDevice(ctx, p, is); err != nil {
		t.Fatal(err)
	}
	ib := make([]int32, len(is))
	if err := CopyFromDevice(ctx, ib, p); err != nil {
		t.Fatal(err)
	}
	for i := range is {
		if ib[i] != is[i] {
			t.Fatalf("int32 back %v", ib)
		}
	}
}

func TestKernel(t *testing.T) {
	ctx := newContext(t)
	mod, err := ctx.LoadModule([]byte(addScalarPTX))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mod.Unload(); err != nil {
			t.Error(err)
		}
	}()
	fn, err := mod.Function("add_scalar")
	if err != nil {
		t.Fatal(err)
	}
	most, err := fn.Attribute(FuncMaxThreadsPerBlock)
	if err != nil || most < 32 || most > 1024 {
		t.Errorf("MAX_THREADS_PER_BLOCK of add_scalar: %d, %v", most, err)
	}
	if b, err := fn.BlockFor(4096); err != nil || b != most&^31 {
		t.Errorf("BlockFor(4096) = %d, %v; want %d", b, err, most&^31)
	}
	if _, err := mod.Function("no_such_kernel"); err == nil {
		t.Error("Function(no_such_kernel) succeeded")
	} else {
		t.Logf("Function(no_such_kernel): %v", err)
	}

	const n = 100_003
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i)*0.25 - 3000
	}
	x, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(x)
	if err := ctx.CopyHtoD(x, host); err != nil {
		t.Fatal(err)
	}

	// An unsupported argument type is refused before the launch.
	if err := fn.Launch([3]uint32{1}, [3]uint32{128}, 0, x, float32(1.5), n); err == nil ||
		!strings.Contains(err.Error(), "kernel argument 2 has unsupported type int") {
		t.Errorf("Launch with an int argument: %v", err)
	}

	want := make([]float32, n)
	check := func(what string) {
		t.Helper()
		if err := ctx.Synchronize(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := make([]float32, n)
		if err := ctx.CopyDtoH(got, x); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: x[%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
	}

	// One block of 128 threads: every thread loops over the array.
	a := float32(1.5)
	for i := range want {
		want[i] = float32(host[i] + a)
	}
	if err := fn.Launch([3]uint32{1}, [3]uint32{128}, 0, x, a, uint32(n)); err != nil {
		t.Fatal(err)
	}
	check("grid 1")

	// A grid from GridFor.
	b := float32(-0.375)
	for i := range want {
		want[i] = float32(want[i] + b)
	}
	grid := GridFor(n, 256, ctx.Device().SMCount)
	if err := fn.Launch([3]uint32{uint32(grid)}, [3]uint32{256, 1, 1}, 0, x, b, uint32(n)); err != nil {
		t.Fatal(err)
	}
	check("GridFor grid")

	// Only a prefix: the bounds check leaves the rest alone.
	m := 1000
	for i := range m {
		want[i] = float32(want[i] + 1)
	}
	if err := fn.Launch([3]uint32{uint32(GridFor(m, 64, 0))}, [3]uint32{64}, 0, x, float32(1), uint32(m)); err != nil {
		t.Fatal(err)
	}
	check("prefix")

	ms, err := ctx.Time(func() error {
		return fn.Launch([3]uint32{uint32(grid)}, [3]uint32{256}, 0, x, float32(0), uint32(n))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("add_scalar over %d floats: %.3f ms", n, ms)
	check("timed launch adding 0")
}

func TestBadPTX(t *testing.T) {
	ctx := newContext(t)
	mod, err := ctx.LoadModule([]byte(badPTX))
	if err == nil {
		mod.Unload()
		t.Fatal("bad PTX loaded")
	}
	t.Logf("bad PTX: %v", err)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *Error", err)
	}
	if e.Name == "" || e.Message == "" || err.Error() == "" {
		t.Errorf("error lacks a name or message: %+v", e)
	}
	if e.Log == "" {
		t.Logf("note: the driver wrote no JIT error log (%s)", ctx.Driver().moduleLoadName)
	}
	if _, err := ctx.LoadModule(nil); err == nil {
		t.Error("LoadModule(nil) succeeded")
	}
}

func TestCopyBandwidth(t *testing.T) {
	ctx := newContext(t)
	bytes, reps := 256<<20, 20
	if testing.Short() {
		bytes, reps = 16<<20, 5
	}
	gbps, err := ctx.CopyBandwidth(bytes, reps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device-to-device copy of %d MiB × %d: %.1f GB/s (read + write)", bytes>>20, reps, gbps)
	if !(gbps > 0) {
		t.Errorf("bandwidth %v", gbps)
	}
}

func TestClosed(t *testing.T) {
	d := loadDriver(t)
	if n, err := d.DeviceCount(); err != nil || n == 0 {
		skipOrFail(t, "no CUDA device (%v)", err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ctx.Alloc(4); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
}

// TestConcurrentUse runs copies and launches from many goroutines at once:
// each method must make the context current on whatever OS thread it runs.
func TestConcurrentUse(t *testing.T) {
	ctx := newContext(t)
	mod, err := ctx.LoadModule([]byte(addScalarPTX))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("add_scalar")
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, iters, n = 16, 300, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float32, n)
			p, err := ctx.Alloc(4 * n)
			if err != nil {
				t.Error(err)
				return
			}
			defer ctx.Free(p)
			if err := ctx.CopyHtoD(p, buf); err != nil {
				t.Error(err)
				return
			}
			for range iters {
				if err := fn.Launch([3]uint32{1}, [3]uint32{32}, 0, p, float32(1), uint32(n)); err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
			}
			if err := ctx.CopyDtoH(buf, p); err != nil {
				t.Error(err)
				return
			}
			for i, v := range buf {
				if v != iters {
					t.Errorf("buf[%d] = %v, want %v", i, v, iters)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestLaunchSharedBytes launches with dynamic shared memory, which the
// kernel does not use: the launch must still succeed (and the fake driver
// checks that the value arrives in the right argument).
func TestLaunchSharedBytes(t *testing.T) {
	ctx := newContext(t)
	mod, err := ctx.LoadModule([]byte(addScalarPTX))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("add_scalar")
	if err != nil {
		t.Fatal(err)
	}
	x, err := ctx.Alloc(40)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(x)
	if err := ctx.MemsetD32(x, math.Float32bits(1), 10); err != nil {
		t.Fatal(err)
	}
	if err := fn.Launch([3]uint32{2}, [3]uint32{3}, 12345, x, float32(2), uint32(10)); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 10)
	if err := ctx.CopyDtoH(got, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 3 {
			t.Fatalf("x[%d] = %v, want 3", i, v)
		}
	}
	if err := fn.Launch([3]uint32{0}, [3]uint32{32}, 0, x, float32(2), uint32(10)); err == nil {
		t.Error("launch with grid X = 0 succeeded")
	}
}
