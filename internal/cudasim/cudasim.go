// Package cudasim is a CUDA driver written in Go over the PTX simulator
// (internal/ptxsim): one simulated device whose kernels are the PTX a
// module was loaded from, run by ptxsim. cudadrv.LoadGo binds it in place
// of libcuda, so a test drives the same cudadrv code — parameter
// marshalling through kernelParams, module loading with its JIT log,
// launches, copies — and the same runtime code as on a GPU, on any
// machine:
//
//	sim, drv, err := cudasim.New(cudasim.Config{})
//	dev, err := drv.Device(0)
//	ctx, err := dev.Context()
//
// or cudasim.Install() before anything loads the driver, to make
// cudadrv.Load (and so the runtime's CUDA backend) use it.
//
// It behaves as a device would where fibergen can tell: a kernel's fault
// (an illegal or misaligned address, a race, …) is reported by the next
// cuCtxSynchronize and every call after it, as CUDA_ERROR_ILLEGAL_ADDRESS
// with the simulator's description in the error's message, until the
// primary context's last retain is released; a block larger than
// Config.MaxThreadsPerBlock fails to launch with
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES. Launches run synchronously.
package cudasim

import (
	"sync"
	"time"
	"unsafe"

	"github.com/fibergen/fibergen/internal/ptxsim"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// Config describes the simulated device.
type Config struct {
	// SMs is the multiprocessor count the device reports (4 if 0): with
	// cudadrv.GridFor's 32 blocks per SM, a small count makes grid-stride
	// loops go round at small sizes.
	SMs int
	// MaxThreadsPerBlock is every kernel's MAX_THREADS_PER_BLOCK and the
	// largest block a launch may use (512 if 0). ptxas gives fibergen's
	// step kernels 79-104 registers, which allow 512-768 threads: 512 is
	// no more than any of them, so code that launches a step with more
	// than the kernel allows fails here as it would on a GPU.
	MaxThreadsPerBlock int
	// Instructions bounds each thread of a launch
	// (ptxsim.DefaultInstructions if 0); past it, the launch fails with
	// CUDA_ERROR_LAUNCH_TIMEOUT.
	Instructions int64
}

// Sim is the simulated device's state.
type Sim struct {
	cfg     Config
	mu      sync.Mutex
	mem     *ptxsim.Memory
	handles map[uintptr]any // modules, functions and events
	next    uintptr
	retains int
	current uintptr
	// fault is the sticky error of a kernel that faulted, faultCode the
	// CUresult every call returns after it.
	fault     error
	faultCode uint32
	strings   map[string][]byte // NUL-terminated strings handed out
	stats     ptxsim.Stats
	elapsed   time.Duration
}

// Library is the name a simulated driver reports as its library.
const Library = "ptxsim (simulated device)"

// Simulated reports whether d is a driver on a simulated device.
func Simulated(d *cudadrv.Driver) bool { return d.Library() == Library }

// primary is the handle of the device's primary context.
const primary = 0xc0

// New returns a simulated device and a driver bound to it.
func New(cfg Config) (*Sim, *cudadrv.Driver, error) {
	if cfg.SMs == 0 {
		cfg.SMs = 4
	}
	if cfg.MaxThreadsPerBlock == 0 {
		cfg.MaxThreadsPerBlock = 512
	}
	s := &Sim{cfg: cfg, mem: ptxsim.NewMemory(), handles: map[uintptr]any{}, next: 0x1000, strings: map[string][]byte{}}
	d, err := cudadrv.LoadGo(Library, s.symbol)
	if err != nil {
		return nil, nil, err
	}
	return s, d, nil
}

// Install makes cudadrv.Load return a driver on a new simulated device
// with the default Config; it must run before anything loads the driver.
func Install() (*Sim, error) {
	s, d, err := New(Config{})
	if err != nil {
		return nil, err
	}
	return s, cudadrv.Use(d)
}

// Stats returns the instructions and threads of every launch so far and
// the time they took.
func (s *Sim) Stats() (ptxsim.Stats, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats, s.elapsed
}

// cstring returns a NUL-terminated copy of v that lives as long as s.
func (s *Sim) cstring(v string) *byte {
	b, ok := s.strings[v]
	if !ok {
		b = append([]byte(v), 0)
		s.strings[v] = b
	}
	return &b[0]
}

// gostring reads the NUL-terminated string at p.
func gostring(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

func (s *Sim) handle(v any) uintptr {
	s.next += 0x10
	s.handles[s.next] = v
	return s.next
}

// call runs f under the lock unless a fault is pending, whose code it
// then returns, as every call on a faulted context does.
func (s *Sim) call(f func() uint32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault != nil {
		return s.faultCode
	}
	return f()
}

// errorText is the name and message of each code the simulator returns.
var errorText = map[uint32][2]string{
	cudadrv.CodeSuccess:              {"CUDA_SUCCESS", "no error"},
	cudadrv.CodeInvalidValue:         {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	cudadrv.CodeOutOfMemory:          {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	cudadrv.CodeInvalidDevice:        {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	cudadrv.CodeInvalidContext:       {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	cudadrv.CodeInvalidPTX:           {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	cudadrv.CodeInvalidHandle:        {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	cudadrv.CodeNotFound:             {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	cudadrv.CodeIllegalAddress:       {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	cudadrv.CodeLaunchOutOfResources: {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	cudadrv.CodeLaunchTimeout:        {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	cudadrv.CodeNotSupported:         {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
}

func (s *Sim) cuGetErrorName(code uint32, str **byte) uint32 { return s.describe(code, str, 0) }

// cuGetErrorString describes a pending fault's code with the simulator's
// message too.
func (s *Sim) cuGetErrorString(code uint32, str **byte) uint32 { return s.describe(code, str, 1) }

// describe stores in *str the name (part 0) or the message (part 1) of
// code.
func (s *Sim) describe(code uint32, str **byte, part int) uint32 {
	t, ok := errorText[code]
	if !ok {
		return cudadrv.CodeInvalidValue
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := t[part]
	if part == 1 && code == s.faultCode && s.fault != nil {
		msg += ": " + s.fault.Error()
	}
	*str = s.cstring(msg)
	return 0
}

func (s *Sim) symbol(name string) any {
	return map[string]any{
		"cuInit":                       func(flags uint32) uint32 { return 0 },
		"cuDriverGetVersion":           func(v *int32) uint32 { *v = 13000; return 0 },
		"cuGetErrorName":               s.cuGetErrorName,
		"cuGetErrorString":             s.cuGetErrorString,
		"cuDeviceGetCount":             func(n *int32) uint32 { *n = 1; return 0 },
		"cuDeviceGet":                  s.cuDeviceGet,
		"cuDeviceGetName":              s.cuDeviceGetName,
		"cuDeviceGetAttribute":         s.cuDeviceGetAttribute,
		"cuDeviceTotalMem_v2":          func(b *uintptr, dev int32) uint32 { *b = totalMem; return 0 },
		"cuDevicePrimaryCtxRetain":     s.cuDevicePrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": s.cuDevicePrimaryCtxRelease,
		"cuCtxSetCurrent":              s.cuCtxSetCurrent,
		"cuCtxGetCurrent":              s.cuCtxGetCurrent,
		"cuCtxSynchronize":             s.cuCtxSynchronize,
		"cuMemAlloc_v2":                s.cuMemAlloc,
		"cuMemFree_v2":                 s.cuMemFree,
		"cuMemcpyHtoD_v2":              s.cuMemcpyHtoD,
		"cuMemcpyDtoH_v2":              s.cuMemcpyDtoH,
		"cuMemcpyDtoD_v2":              s.cuMemcpyDtoD,
		"cuMemsetD32_v2":               s.cuMemsetD32,
		"cuMemGetInfo_v2":              s.cuMemGetInfo,
		"cuModuleLoadData":             s.cuModuleLoadData,
		"cuModuleLoadDataEx":           s.cuModuleLoadDataEx,
		"cuModuleGetFunction":          s.cuModuleGetFunction,
		"cuModuleUnload":               s.cuModuleUnload,
		"cuFuncGetAttribute":           s.cuFuncGetAttribute,
		"cuLaunchKernel":               s.cuLaunchKernel,
		"cuEventCreate":                s.cuEventCreate,
		"cuEventRecord":                s.cuEventRecord,
		"cuEventSynchronize":           s.cuEventSynchronize,
		"cuEventElapsedTime_v2":        s.cuEventElapsedTime,
		"cuEventDestroy_v2":            s.cuEventDestroy,
	}[name]
}

// totalMem is the memory the device has: 16 GiB (each simulated byte
// costs about five host bytes, with the launch rules' bookkeeping).
const totalMem = 16 << 30

// maxShared is the dynamic shared memory a launch may ask for (a block's
// default limit); the simulated kernels use none.
const maxShared = 48 << 10

func (s *Sim) cuMemGetInfo(free, total *uintptr) uint32 {
	return s.call(func() uint32 {
		*free, *total = uintptr(totalMem-s.mem.Allocated()), totalMem
		return 0
	})
}

func (s *Sim) cuDeviceGet(dev *int32, ordinal int32) uint32 {
	if ordinal != 0 {
		return cudadrv.CodeInvalidDevice
	}
	*dev = 0
	return 0
}

func (s *Sim) cuDeviceGetName(name *byte, length int32, dev int32) uint32 {
	if length <= 0 || name == nil {
		return cudadrv.CodeInvalidValue
	}
	b := unsafe.Slice(name, length)
	n := copy(b[:max(length-1, 0)], Library)
	b[n] = 0
	return 0
}

func (s *Sim) cuDeviceGetAttribute(v *int32, attr int32, dev int32) uint32 {
	vals := map[cudadrv.DeviceAttribute]int{
		cudadrv.AttrMaxThreadsPerBlock: ptxsim.MaxBlockThreads, cudadrv.AttrMaxGridDimX: 1<<31 - 1,
		cudadrv.AttrMaxSharedMemoryPerBlock: maxShared, cudadrv.AttrWarpSize: 32,
		cudadrv.AttrMultiprocessorCount: s.cfg.SMs, cudadrv.AttrMemoryClockRate: 2619000,
		cudadrv.AttrGlobalMemoryBusWidth: 5120, cudadrv.AttrL2CacheSize: 50 << 20,
		cudadrv.AttrMaxThreadsPerMultiprocessor: 2048,
		cudadrv.AttrComputeCapabilityMajor:      9, cudadrv.AttrComputeCapabilityMinor: 0,
	}
	x, ok := vals[cudadrv.DeviceAttribute(attr)]
	if !ok {
		return cudadrv.CodeNotSupported
	}
	*v = int32(x)
	return 0
}

func (s *Sim) cuDevicePrimaryCtxRetain(ctx *uintptr, dev int32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retains++
	*ctx = primary
	return 0
}

// cuDevicePrimaryCtxRelease destroys the context with its last retain:
// its memory, modules and any pending fault.
func (s *Sim) cuDevicePrimaryCtxRelease(dev int32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retains == 0 {
		return cudadrv.CodeInvalidContext
	}
	s.retains--
	if s.retains == 0 {
		s.mem, s.handles, s.fault, s.faultCode = ptxsim.NewMemory(), map[uintptr]any{}, nil, 0
	}
	return 0
}

func (s *Sim) cuCtxSetCurrent(ctx uintptr) uint32 {
	if ctx != 0 && ctx != primary {
		return cudadrv.CodeInvalidContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = ctx
	return 0
}

func (s *Sim) cuCtxGetCurrent(ctx *uintptr) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	*ctx = s.current
	return 0
}

func (s *Sim) cuCtxSynchronize() uint32 { return s.call(func() uint32 { return 0 }) }
