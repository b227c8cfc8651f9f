// Package cudadrv is a small binding to the CUDA driver API (libcuda), loaded
// at run time with purego: it has no cgo, builds with CGO_ENABLED=0, and a
// program that imports it runs on machines without CUDA, where Load returns
// an error that says what is missing.
//
// The binding covers what a code generator needs to run and time its own
// PTX kernels: devices and their properties, the primary context of a
// device, device memory and copies, PTX modules (with the JIT error log when
// one does not load), kernel launches on the default stream, and events for
// timing.
//
//	d, err := cudadrv.Load()
//	if err != nil { ... } // no driver, no device, ...
//	dev, err := d.Device(0)
//	ctx, err := dev.Context()
//	defer ctx.Close()
//	x, err := ctx.Alloc(4 * n)
//	err = ctx.CopyHtoD(x, host)
//	mod, err := ctx.LoadModule(ptx)
//	fn, err := mod.Function("add_scalar")
//	err = fn.Launch([3]uint32{uint32(cudadrv.GridFor(n, 256, dev.SMCount))},
//		[3]uint32{256}, 0, x, float32(1.5), uint32(n))
//	err = ctx.Synchronize()
//	err = ctx.CopyDtoH(host, x)
//
// # Threads
//
// A CUDA context is current per OS thread, and a goroutine may move between
// OS threads between any two calls. Every method of Context, Module,
// Function and Timer therefore locks its goroutine to its OS thread for the
// duration of the method and makes its context current (cuCtxSetCurrent)
// before it calls the driver; callers need not call runtime.LockOSThread
// themselves. All methods may be called from several goroutines at once, as
// the driver API allows, except Close and Unload, which must not race with
// other uses of the same object.
//
// # Memory
//
// Host slices handed to the driver are pinned with runtime.Pinner for the
// duration of the call; the driver keeps no reference to Go memory after a
// call returns. Device memory is not garbage collected: Free what Alloc
// returns.
//
// # Argument types
//
// Kernel arguments are passed by value and must have the exact type of the
// kernel's parameter: DevicePtr (or uint64) for a .u64 pointer, float32 for
// .f32, float64 for .f64, int32/uint32 for .s32/.u32, int64/uint64 for
// .s64/.u64. Go's int is rejected, since its width says nothing about the
// parameter's.
package cudadrv

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Driver is the loaded CUDA driver library, initialized with cuInit. There is
// one per process (see Load); it is safe for concurrent use.
type Driver struct {
	lib     uintptr
	libName string
	// elapsedName is the symbol bound to cuEventElapsedTime: the _v2 one
	// where the driver has it (CUDA 12.8 and later), the original otherwise.
	elapsedName string
	// moduleLoadName is "cuModuleLoadDataEx" when that symbol is present (it
	// is used to fetch the JIT error log), "cuModuleLoadData" otherwise.
	moduleLoadName string
	// goLookup is the symbol table of a driver from LoadGo; nil for libcuda.
	goLookup func(string) any

	// CUresult is a C enum: every function returns it as a uint32. CUdevice
	// is a C int (int32); CUcontext, CUmodule, CUfunction, CUevent and
	// CUstream are opaque pointers held as uintptr; CUdeviceptr is an
	// unsigned long long (uint64); size_t is uintptr.
	cuInit                    func(flags uint32) uint32
	cuDriverGetVersion        func(version *int32) uint32
	cuGetErrorName            func(code uint32, str **byte) uint32
	cuGetErrorString          func(code uint32, str **byte) uint32
	cuDeviceGetCount          func(count *int32) uint32
	cuDeviceGet               func(dev *int32, ordinal int32) uint32
	cuDeviceGetName           func(name *byte, length int32, dev int32) uint32
	cuDeviceGetAttribute      func(value *int32, attr int32, dev int32) uint32
	cuDeviceTotalMem          func(bytes *uintptr, dev int32) uint32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) uint32
	cuDevicePrimaryCtxRelease func(dev int32) uint32
	cuCtxSetCurrent           func(ctx uintptr) uint32
	cuCtxGetCurrent           func(ctx *uintptr) uint32
	cuCtxSynchronize          func() uint32
	cuMemAlloc                func(dptr *uint64, bytes uintptr) uint32
	cuMemFree                 func(dptr uint64) uint32
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, bytes uintptr) uint32
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, bytes uintptr) uint32
	cuMemcpyDtoD              func(dst uint64, src uint64, bytes uintptr) uint32
	cuMemsetD32               func(dst uint64, value uint32, count uintptr) uint32
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) uint32
	// cuModuleLoadDataEx(CUmodule*, const void* image, unsigned numOptions,
	// CUjit_option* options, void** optionValues). Optional (nil if absent).
	cuModuleLoadDataEx  func(mod *uintptr, image unsafe.Pointer, numOptions uint32, options *int32, values *uintptr) uint32
	cuModuleGetFunction func(fn *uintptr, mod uintptr, name *byte) uint32
	cuFuncGetAttribute  func(value *int32, attr int32, fn uintptr) uint32
	cuModuleUnload      func(mod uintptr) uint32
	// cuLaunchKernel takes 11 integer-class arguments. purego v0.11.3 passes
	// up to maxArgs = 32 arguments: on linux/amd64 the first 6 go in
	// registers and the rest are spilled to the C stack by its syscallX
	// trampoline (sys_amd64.s); on arm64 the first 8 go in registers.
	// RegisterFunc checks this at bind time and panics (an error from Load
	// here) if a signature needed more.
	cuLaunchKernel func(fn uintptr, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes uint32,
		stream uintptr, params *unsafe.Pointer, extra uintptr) uint32
	cuEventCreate      func(ev *uintptr, flags uint32) uint32
	cuEventRecord      func(ev uintptr, stream uintptr) uint32
	cuEventSynchronize func(ev uintptr) uint32
	cuEventElapsedTime func(ms *float32, start, end uintptr) uint32
	cuEventDestroy     func(ev uintptr) uint32
}

// symbol is one driver entry point Load binds: the first of names that the
// library exports is bound to fptr.
type symbol struct {
	names    []string
	fptr     any
	optional bool
	// bound, if set, is told which name was bound.
	bound *string
}

// symbols lists every driver function the binding uses, with the exact
// exported names: the _v2 variants where the driver exports versioned ones
// (cuMemAlloc_v2 takes a 64-bit CUdeviceptr and size_t; plain cuMemAlloc is
// the old 32-bit ABI and must not be used).
func (d *Driver) symbols() []symbol {
	return []symbol{
		{names: []string{"cuInit"}, fptr: &d.cuInit},
		{names: []string{"cuDriverGetVersion"}, fptr: &d.cuDriverGetVersion},
		{names: []string{"cuGetErrorName"}, fptr: &d.cuGetErrorName},
		{names: []string{"cuGetErrorString"}, fptr: &d.cuGetErrorString},
		{names: []string{"cuDeviceGetCount"}, fptr: &d.cuDeviceGetCount},
		{names: []string{"cuDeviceGet"}, fptr: &d.cuDeviceGet},
		{names: []string{"cuDeviceGetName"}, fptr: &d.cuDeviceGetName},
		{names: []string{"cuDeviceGetAttribute"}, fptr: &d.cuDeviceGetAttribute},
		{names: []string{"cuDeviceTotalMem_v2"}, fptr: &d.cuDeviceTotalMem},
		{names: []string{"cuDevicePrimaryCtxRetain"}, fptr: &d.cuDevicePrimaryCtxRetain},
		{names: []string{"cuDevicePrimaryCtxRelease_v2"}, fptr: &d.cuDevicePrimaryCtxRelease},
		{names: []string{"cuCtxSetCurrent"}, fptr: &d.cuCtxSetCurrent},
		{names: []string{"cuCtxGetCurrent"}, fptr: &d.cuCtxGetCurrent},
		{names: []string{"cuCtxSynchronize"}, fptr: &d.cuCtxSynchronize},
		{names: []string{"cuMemAlloc_v2"}, fptr: &d.cuMemAlloc},
		{names: []string{"cuMemFree_v2"}, fptr: &d.cuMemFree},
		{names: []string{"cuMemcpyHtoD_v2"}, fptr: &d.cuMemcpyHtoD},
		{names: []string{"cuMemcpyDtoH_v2"}, fptr: &d.cuMemcpyDtoH},
		{names: []string{"cuMemcpyDtoD_v2"}, fptr: &d.cuMemcpyDtoD},
		{names: []string{"cuMemsetD32_v2"}, fptr: &d.cuMemsetD32},
		{names: []string{"cuModuleLoadData"}, fptr: &d.cuModuleLoadData},
		{names: []string{"cuModuleLoadDataEx"}, fptr: &d.cuModuleLoadDataEx, optional: true},
		{names: []string{"cuModuleGetFunction"}, fptr: &d.cuModuleGetFunction},
		{names: []string{"cuFuncGetAttribute"}, fptr: &d.cuFuncGetAttribute},
		{names: []string{"cuModuleUnload"}, fptr: &d.cuModuleUnload},
		{names: []string{"cuLaunchKernel"}, fptr: &d.cuLaunchKernel},
		{names: []string{"cuEventCreate"}, fptr: &d.cuEventCreate},
		{names: []string{"cuEventRecord"}, fptr: &d.cuEventRecord},
		{names: []string{"cuEventSynchronize"}, fptr: &d.cuEventSynchronize},
		{names: []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, fptr: &d.cuEventElapsedTime, bound: &d.elapsedName},
		{names: []string{"cuEventDestroy_v2"}, fptr: &d.cuEventDestroy},
	}
}

var (
	loadOnce  sync.Once
	loaded    *Driver
	loadedErr error
)

// Load loads the CUDA driver library (libcuda.so.1, else libcuda.so),
// resolves the functions this package uses and calls cuInit(0). It does so
// once per process: later calls return the same *Driver, or the same error.
//
// The error says what is missing: the library (no NVIDIA driver), a symbol
// (a driver too old for this binding), or a device (cuInit failing with
// CUDA_ERROR_NO_DEVICE, an *Error).
func Load() (*Driver, error) {
	loadOnce.Do(func() {
		loaded, loadedErr = load()
	})
	return loaded, loadedErr
}

func load() (*Driver, error) {
	lib, name, err := openLibrary()
	if err != nil {
		return nil, err
	}
	d := &Driver{lib: lib, libName: name}
	if err := d.bind(func(sym string) (uintptr, error) { return lookupSymbol(lib, sym) }); err != nil {
		return nil, err
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, err
	}
	return d, nil
}

// bind resolves every symbol with lookup and binds it. It is separate from
// load so that the Go function types can be checked against purego without
// a driver (see the tests).
func (d *Driver) bind(lookup func(string) (uintptr, error)) error {
	for _, s := range d.symbols() {
		var addr uintptr
		var name string
		var lookupErrs []error
		for _, n := range s.names {
			a, err := lookup(n)
			if err == nil && a != 0 {
				addr, name = a, n
				break
			}
			if err == nil {
				err = errors.New("symbol resolves to NULL")
			}
			lookupErrs = append(lookupErrs, err)
		}
		if addr == 0 {
			if s.optional {
				continue
			}
			return fmt.Errorf("cuda: %s lacks %s (driver too old for this binding?): %w",
				d.libName, s.names[0], errors.Join(lookupErrs...))
		}
		if err := bindFunc(s.fptr, addr); err != nil {
			return fmt.Errorf("cuda: cannot bind %s: %w", name, err)
		}
		if s.bound != nil {
			*s.bound = name
		}
	}
	d.setModuleLoadName()
	return nil
}

func (d *Driver) setModuleLoadName() {
	d.moduleLoadName = "cuModuleLoadData"
	if d.cuModuleLoadDataEx != nil {
		d.moduleLoadName = "cuModuleLoadDataEx"
	}
}

// Library is the file name the driver was loaded from, e.g. "libcuda.so.1".
func (d *Driver) Library() string { return d.libName }

// check turns a CUresult into nil or an *Error naming call.
func (d *Driver) check(call string, r uint32) error {
	if r == CodeSuccess {
		return nil
	}
	e := &Error{Call: call, Code: int(r)}
	var s *byte
	if d.cuGetErrorName != nil && d.cuGetErrorName(r, &s) == CodeSuccess {
		e.Name = goString(s, 256)
	}
	s = nil
	if d.cuGetErrorString != nil && d.cuGetErrorString(r, &s) == CodeSuccess {
		e.Message = goString(s, 1024)
	}
	return e
}

// goString copies the NUL-terminated C string at p (at most max bytes of it)
// into a Go string. The driver's error strings are static constants.
func goString(p *byte, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Version returns the CUDA version the driver supports, as 1000*major +
// 10*minor: 13000 for CUDA 13.0, 12080 for 12.8.
func (d *Driver) Version() (int, error) {
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// DeviceAttribute is a CUdevice_attribute, for Device.Attribute.
type DeviceAttribute int32

// A few CUdevice_attribute values (cuda.h).
const (
	AttrMaxThreadsPerBlock          DeviceAttribute = 1  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrMaxGridDimX                 DeviceAttribute = 5  // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
	AttrMaxSharedMemoryPerBlock     DeviceAttribute = 8  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
	AttrWarpSize                    DeviceAttribute = 10 // CU_DEVICE_ATTRIBUTE_WARP_SIZE
	AttrMultiprocessorCount         DeviceAttribute = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrMemoryClockRate             DeviceAttribute = 36 // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, kHz
	AttrGlobalMemoryBusWidth        DeviceAttribute = 37 // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, bits
	AttrL2CacheSize                 DeviceAttribute = 38 // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, bytes
	AttrMaxThreadsPerMultiprocessor DeviceAttribute = 39 // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
	AttrComputeCapabilityMajor      DeviceAttribute = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor      DeviceAttribute = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
)

// Device is one CUDA device and the properties read when it was opened.
type Device struct {
	d   *Driver
	dev int32 // CUdevice

	// Ordinal is the device's index, as given to Driver.Device.
	Ordinal int
	// Name is the device's name, e.g. "NVIDIA H100 80GB HBM3".
	Name string
	// Major and Minor are the compute capability, e.g. 9 and 0 for sm_90.
	Major, Minor int
	// SMCount is the number of streaming multiprocessors.
	SMCount int
	// TotalMem is the device memory in bytes.
	TotalMem int64
}

// Device opens the device with the given ordinal (0 ≤ ordinal <
// DeviceCount) and reads its name, compute capability, multiprocessor count
// and memory size.
func (d *Driver) Device(ordinal int) (*Device, error) {
	if ordinal < 0 || ordinal > 1<<31-1 {
		return nil, fmt.Errorf("cuda: invalid device ordinal %d", ordinal)
	}
	var dev int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return nil, err
	}
	x := &Device{d: d, dev: dev, Ordinal: ordinal}

	var name [256]byte
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return nil, err
	}
	n := 0
	for n < len(name) && name[n] != 0 {
		n++
	}
	x.Name = string(name[:n])

	for _, a := range []struct {
		attr DeviceAttribute
		dst  *int
	}{
		{AttrComputeCapabilityMajor, &x.Major},
		{AttrComputeCapabilityMinor, &x.Minor},
		{AttrMultiprocessorCount, &x.SMCount},
	} {
		v, err := x.Attribute(a.attr)
		if err != nil {
			return nil, err
		}
		*a.dst = v
	}

	var mem uintptr
	if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&mem, dev)); err != nil {
		return nil, err
	}
	x.TotalMem = int64(mem)
	return x, nil
}

// Attribute returns the value of a device attribute (cuDeviceGetAttribute).
func (x *Device) Attribute(attr DeviceAttribute) (int, error) {
	var v int32
	if err := x.d.check("cuDeviceGetAttribute", x.d.cuDeviceGetAttribute(&v, int32(attr), x.dev)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Arch returns the device's PTX target name, e.g. "sm_90".
func (x *Device) Arch() string { return fmt.Sprintf("sm_%d%d", x.Major, x.Minor) }

// String describes the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs,
// 79.1 GiB)".
func (x *Device) String() string {
	return fmt.Sprintf("%s (%s, %d SMs, %.1f GiB)", x.Name, x.Arch(), x.SMCount, float64(x.TotalMem)/(1<<30))
}
