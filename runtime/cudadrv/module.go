package cudadrv

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"
)

// JIT options of cuModuleLoadDataEx (CUjit_option, cuda.h) that
// LoadModule passes: a driver in Go (LoadGo) honours them too.
const (
	JITErrorLogBuffer          = 5 // CU_JIT_ERROR_LOG_BUFFER
	JITErrorLogBufferSizeBytes = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
)

// jitLogSize is the size of the buffer the JIT compiler writes its error
// log into.
const jitLogSize = 16 << 10

// Module is a loaded module: PTX compiled for the context's device.
type Module struct {
	ctx      *Context
	handle   uintptr // CUmodule
	unloaded atomic.Bool
}

// LoadModule loads a module from PTX text (cuModuleLoadDataEx, or
// cuModuleLoadData on a driver without it), JIT-compiling it for the
// context's device. The PTX need not be NUL-terminated: LoadModule copies it
// and adds the NUL. A cubin or fatbin image works too.
//
// When the PTX does not load, the error is an *Error whose Log field holds
// the JIT compiler's error log (the line and the reason), which Error()
// prints after the CUresult.
func (c *Context) LoadModule(ptx []byte) (*Module, error) {
	if len(ptx) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule: empty image")
	}
	image := make([]byte, len(ptx)+1)
	copy(image, ptx)

	leave, err := c.enter()
	if err != nil {
		return nil, err
	}
	defer leave()

	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&image[0])

	d := c.d
	var h uintptr
	if d.cuModuleLoadDataEx == nil {
		if err := d.check("cuModuleLoadData", d.cuModuleLoadData(&h, unsafe.Pointer(&image[0]))); err != nil {
			return nil, err
		}
		return &Module{ctx: c, handle: h}, nil
	}

	// The option values are void*: a pointer for the buffer, and the buffer
	// size stored in the pointer-sized slot itself. On return the driver
	// replaces the size with the number of bytes it wrote. The values array
	// holds the buffer's address as a uintptr, which the GC does not trace:
	// the buffer is pinned (and so kept alive) until the call returns.
	logBuf := make([]byte, jitLogSize)
	pin.Pin(&logBuf[0])
	options := []int32{JITErrorLogBuffer, JITErrorLogBufferSizeBytes}
	values := []uintptr{uintptr(unsafe.Pointer(&logBuf[0])), uintptr(len(logBuf))}
	pin.Pin(&options[0])
	pin.Pin(&values[0])

	r := d.cuModuleLoadDataEx(&h, unsafe.Pointer(&image[0]), uint32(len(options)), &options[0], &values[0])
	runtime.KeepAlive(logBuf)
	if err := d.check("cuModuleLoadDataEx", r); err != nil {
		err.(*Error).Log = jitLog(logBuf, values[1])
		return nil, err
	}
	return &Module{ctx: c, handle: h}, nil
}

// jitLog extracts the log text from the JIT log buffer given the filled size
// the driver wrote back (an unsigned int in a pointer-sized slot; only the
// low 32 bits are read, and the text is cut at the first NUL in any case).
func jitLog(buf []byte, filled uintptr) string {
	n := int(uint32(filled))
	if n <= 0 || n > len(buf) {
		n = len(buf)
	}
	b := buf[:n]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// Function looks up the kernel (.entry) named name in the module
// (cuModuleGetFunction).
func (m *Module) Function(name string) (*Function, error) {
	if m.unloaded.Load() {
		return nil, ErrClosed
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return nil, fmt.Errorf("cuda: invalid kernel name %q", name)
	}
	cname := append([]byte(name), 0)
	leave, err := m.ctx.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&cname[0])
	var h uintptr
	if err := m.ctx.d.check("cuModuleGetFunction", m.ctx.d.cuModuleGetFunction(&h, m.handle, &cname[0])); err != nil {
		if e, ok := err.(*Error); ok {
			e.Call = fmt.Sprintf("cuModuleGetFunction(%q)", name)
		}
		return nil, err
	}
	return &Function{mod: m, handle: h, Name: name}, nil
}

// Unload unloads the module (cuModuleUnload); its Functions must not be
// launched after. Unload is idempotent.
func (m *Module) Unload() error {
	if m.unloaded.Swap(true) {
		return nil
	}
	leave, err := m.ctx.enter()
	if err != nil {
		return err
	}
	defer leave()
	return m.ctx.d.check("cuModuleUnload", m.ctx.d.cuModuleUnload(m.handle))
}

// Function is a kernel in a loaded module.
type Function struct {
	mod    *Module
	handle uintptr // CUfunction
	// Name is the kernel's name.
	Name string
}

// Launch launches the kernel on grid × block threads on the default
// stream (cuLaunchKernel with hStream = 0), with sharedBytes of dynamic
// shared memory, passing args as the kernel's parameters in order. A zero Y
// or Z dimension in grid or block means 1; a zero X dimension is an error.
//
// Each argument must have the exact Go type of its parameter: DevicePtr,
// float32, float64, int32, uint32, int64 or uint64 (see the package
// documentation); any other type is rejected before the launch. The number
// of arguments must match the kernel's; the driver cannot check it.
//
// Launch is asynchronous: it returns once the launch is queued. Errors of
// the kernel's execution show in Context.Synchronize or a later call.
func (f *Function) Launch(grid, block [3]uint32, sharedBytes int, args ...any) error {
	if f.mod.unloaded.Load() {
		return ErrClosed
	}
	for _, dim := range []*[3]uint32{&grid, &block} {
		if dim[1] == 0 {
			dim[1] = 1
		}
		if dim[2] == 0 {
			dim[2] = 1
		}
	}
	if grid[0] == 0 || block[0] == 0 {
		return fmt.Errorf("cuda: launch of %s with grid %v, block %v: X dimension is 0", f.Name, grid, block)
	}
	if sharedBytes < 0 || int64(sharedBytes) > math.MaxUint32 {
		return fmt.Errorf("cuda: launch of %s with %d bytes of shared memory", f.Name, sharedBytes)
	}
	cells, err := marshalArgs(args)
	if err != nil {
		return fmt.Errorf("cuda: launch of %s: %w", f.Name, err)
	}

	// kernelParams is a void*[] whose i-th entry points at the value of the
	// i-th parameter. Both the cells and the pointer array are Go memory
	// handed to C, so both are pinned while the driver reads them; the
	// driver copies the values during cuLaunchKernel.
	var pin runtime.Pinner
	defer pin.Unpin()
	var params *unsafe.Pointer
	if len(cells) > 0 {
		pin.Pin(&cells[0])
		ptrs := make([]unsafe.Pointer, len(cells))
		for i := range cells {
			ptrs[i] = unsafe.Pointer(&cells[i])
		}
		pin.Pin(&ptrs[0])
		params = &ptrs[0]
	}

	c := f.mod.ctx
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	r := c.d.cuLaunchKernel(f.handle,
		grid[0], grid[1], grid[2],
		block[0], block[1], block[2],
		uint32(sharedBytes), 0, params, 0)
	runtime.KeepAlive(cells)
	if err := c.d.check("cuLaunchKernel", r); err != nil {
		if e, ok := err.(*Error); ok {
			e.Call = fmt.Sprintf("cuLaunchKernel(%s, grid %v, block %v)", f.Name, grid, block)
		}
		return err
	}
	return nil
}

// paramCell holds one kernel parameter's value. Every cell is 8 bytes and
// 8-byte aligned, enough for every supported type; a 4-byte value sits at
// the start of its cell, where the driver reads it (whatever the byte
// order, since it is stored through a pointer of its own type).
type paramCell = uint64

// marshalArgs converts kernel arguments to parameter cells, rejecting any
// type the kernel ABI does not have an unambiguous match for. It calls no
// driver function.
func marshalArgs(args []any) ([]paramCell, error) {
	cells := make([]paramCell, len(args))
	for i, a := range args {
		p := unsafe.Pointer(&cells[i])
		switch v := a.(type) {
		case DevicePtr:
			*(*uint64)(p) = uint64(v)
		case uint64:
			*(*uint64)(p) = v
		case int64:
			*(*int64)(p) = v
		case float64:
			*(*float64)(p) = v
		case float32:
			*(*float32)(p) = v
		case int32:
			*(*int32)(p) = v
		case uint32:
			*(*uint32)(p) = v
		case int, uint, uintptr:
			return nil, fmt.Errorf("kernel argument %d has unsupported type %T: use int32, uint32, int64 or uint64 to match the kernel parameter's width", i, a)
		default:
			return nil, fmt.Errorf("kernel argument %d has unsupported type %T: want DevicePtr, float32, float64, int32, uint32, int64 or uint64", i, a)
		}
	}
	return cells, nil
}

// GridFor returns the number of blocks for a grid-stride loop over n
// elements with blockSize threads per block on a device with smCount
// multiprocessors: enough blocks to cover n, ceil(n/blockSize), but no more
// than 32 per multiprocessor (if smCount > 0), and at least 1. A blockSize
// below 1 counts as 1.
func GridFor(n, blockSize, smCount int) int {
	if blockSize < 1 {
		blockSize = 1
	}
	if n < 1 {
		return 1
	}
	g := n/blockSize + min(n%blockSize, 1)
	if smCount > 0 && g > 32*smCount {
		g = 32 * smCount
	}
	const maxGridX = 1<<31 - 1
	return max(min(g, maxGridX), 1)
}

// FuncAttribute is a CUfunction_attribute, for Function.Attribute.
type FuncAttribute int32

// The CUfunction_attribute values the runtime reads (cuda.h).
const (
	// FuncMaxThreadsPerBlock is the largest block the kernel can be
	// launched with on its device: fewer than the device's 1024 when its
	// registers per thread do not fit a larger block.
	FuncMaxThreadsPerBlock FuncAttribute = 0
)

// Attribute returns one of the kernel's attributes (cuFuncGetAttribute).
func (f *Function) Attribute(attr FuncAttribute) (int, error) {
	if f.mod.unloaded.Load() {
		return 0, ErrClosed
	}
	leave, err := f.mod.ctx.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	var v int32
	if err := f.mod.ctx.d.check("cuFuncGetAttribute", f.mod.ctx.d.cuFuncGetAttribute(&v, int32(attr), f.handle)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// BlockFor returns the block size to launch f with: want, or the largest
// multiple of the warp (32) that f's MAX_THREADS_PER_BLOCK allows when want
// is more, so that a kernel whose registers do not fit want threads per
// block still launches. An error says why there is none.
func (f *Function) BlockFor(want int) (int, error) {
	most, err := f.Attribute(FuncMaxThreadsPerBlock)
	if err != nil {
		return 0, err
	}
	if want <= most {
		return want, nil
	}
	if b := most &^ 31; b > 0 {
		return b, nil
	}
	return 0, fmt.Errorf("cuda: %s can be launched with at most %d threads per block", f.Name, most)
}
