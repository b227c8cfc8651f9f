package cudadrv

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// DevicePtr is an address in device memory (a CUdeviceptr). Pass it to a
// kernel for a .u64 pointer parameter.
type DevicePtr uint64

// Add returns p offset by bytes (which may be negative), e.g. the start of a
// shard of a larger allocation.
func (p DevicePtr) Add(bytes int) DevicePtr { return p + DevicePtr(int64(bytes)) }

// Context is a device's primary context, retained by Device.Context. Its
// methods make it current on the calling OS thread before each driver call
// (see the package documentation).
type Context struct {
	d      *Driver
	dev    *Device
	handle uintptr // CUcontext
	closed atomic.Bool
}

// Context retains the device's primary context (cuDevicePrimaryCtxRetain),
// the context the CUDA runtime API also uses, and makes it current on the
// calling thread. Each Context must be closed with Close, which releases the
// retain; the primary context is destroyed when the last retain is released.
func (x *Device) Context() (*Context, error) {
	d := x.d
	var h uintptr
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&h, x.dev)); err != nil {
		return nil, err
	}
	if h == 0 {
		// Not expected from a successful call; refuse rather than use it.
		d.cuDevicePrimaryCtxRelease(x.dev)
		return nil, fmt.Errorf("cuda: cuDevicePrimaryCtxRetain returned a NULL context")
	}
	c := &Context{d: d, dev: x, handle: h}
	if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(h)); err != nil {
		d.cuDevicePrimaryCtxRelease(x.dev)
		return nil, err
	}
	return c, nil
}

// Device returns the device whose primary context c is.
func (c *Context) Device() *Device { return c.dev }

// Driver returns the driver c belongs to.
func (c *Context) Driver() *Driver { return c.d }

// enter locks the calling goroutine to its OS thread and makes c current on
// that thread. On success the caller must call the returned function (which
// unlocks the thread) when done with the driver.
func (c *Context) enter() (leave func(), err error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	runtime.LockOSThread()
	if err := c.d.check("cuCtxSetCurrent", c.d.cuCtxSetCurrent(c.handle)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// SetCurrent makes c current on the calling OS thread. Methods of this
// package do it themselves; it is only for code that mixes in other driver
// calls, and is of use only to a goroutine locked with runtime.LockOSThread.
func (c *Context) SetCurrent() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.d.check("cuCtxSetCurrent", c.d.cuCtxSetCurrent(c.handle))
}

// Close releases the primary context (cuDevicePrimaryCtxRelease_v2). When it
// was the last retain, the context and everything allocated in it (memory,
// modules, events) is destroyed. Close is idempotent; other methods return
// ErrClosed after it.
func (c *Context) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Do not leave this thread with a context that may be destroyed below.
	var cur uintptr
	if c.d.cuCtxGetCurrent(&cur) == CodeSuccess && cur == c.handle {
		c.d.cuCtxSetCurrent(0)
	}
	return c.d.check("cuDevicePrimaryCtxRelease_v2", c.d.cuDevicePrimaryCtxRelease(c.dev.dev))
}

// Synchronize waits until all work queued in the context has finished
// (cuCtxSynchronize). A kernel's own failure (an illegal address, say) is
// reported here, or by the next call after it.
func (c *Context) Synchronize() error {
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return c.d.check("cuCtxSynchronize", c.d.cuCtxSynchronize())
}

// Alloc allocates bytes of device memory (cuMemAlloc_v2). The memory is
// uninitialized and aligned to at least 256 bytes.
func (c *Context) Alloc(bytes int) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc of %d bytes", bytes)
	}
	leave, err := c.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	var p uint64
	if err := c.d.check("cuMemAlloc_v2", c.d.cuMemAlloc(&p, uintptr(bytes))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// Free frees memory from Alloc (cuMemFree_v2). Freeing 0 does nothing.
func (c *Context) Free(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return c.d.check("cuMemFree_v2", c.d.cuMemFree(uint64(p)))
}

// Elem is the element types of host slices that can be copied to and from
// device memory: fixed-size numbers without pointers.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// CopyToDevice copies src to device memory at dst (cuMemcpyHtoD_v2). It
// returns when the copy is done and src may be reused.
func CopyToDevice[T Elem](c *Context, dst DevicePtr, src []T) error {
	p, n := hostMemory(src)
	return c.withHostMemory(p, n, func() error {
		return c.d.check("cuMemcpyHtoD_v2", c.d.cuMemcpyHtoD(uint64(dst), p, n))
	})
}

// CopyFromDevice copies len(dst) elements from device memory at src into dst
// (cuMemcpyDtoH_v2). It waits for earlier work on the default stream, such as
// kernels writing src, and returns when dst holds the data.
func CopyFromDevice[T Elem](c *Context, dst []T, src DevicePtr) error {
	p, n := hostMemory(dst)
	return c.withHostMemory(p, n, func() error {
		return c.d.check("cuMemcpyDtoH_v2", c.d.cuMemcpyDtoH(p, uint64(src), n))
	})
}

// hostMemory returns the address and byte length of s.
func hostMemory[T Elem](s []T) (unsafe.Pointer, uintptr) {
	var zero T
	return unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s)) * unsafe.Sizeof(zero)
}

// withHostMemory runs copy, a driver copy to or from the n bytes of host
// memory at p, with that memory pinned and the context current; n == 0 is
// a no-op.
func (c *Context) withHostMemory(p unsafe.Pointer, n uintptr, copy func() error) error {
	if n == 0 {
		return nil
	}
	var pin runtime.Pinner
	pin.Pin(p)
	defer pin.Unpin()
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return copy()
}

// CopyHtoD copies src to device memory at dst; see CopyToDevice.
func (c *Context) CopyHtoD(dst DevicePtr, src []float32) error { return CopyToDevice(c, dst, src) }

// CopyDtoH copies len(dst) float32 values from device memory at src into
// dst; see CopyFromDevice.
func (c *Context) CopyDtoH(dst []float32, src DevicePtr) error { return CopyFromDevice(c, dst, src) }

// CopyBytesHtoD copies src to device memory at dst; see CopyToDevice.
func (c *Context) CopyBytesHtoD(dst DevicePtr, src []byte) error { return CopyToDevice(c, dst, src) }

// CopyBytesDtoH copies len(dst) bytes from device memory at src into dst;
// see CopyFromDevice.
func (c *Context) CopyBytesDtoH(dst []byte, src DevicePtr) error { return CopyFromDevice(c, dst, src) }

// CopyDtoD copies bytes of device memory from src to dst (cuMemcpyDtoD_v2),
// in order with other work on the default stream. It may return before the
// copy is done.
func (c *Context) CopyDtoD(dst, src DevicePtr, bytes int) error {
	if bytes < 0 {
		return fmt.Errorf("cuda: CopyDtoD of %d bytes", bytes)
	}
	if bytes == 0 {
		return nil
	}
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return c.d.check("cuMemcpyDtoD_v2", c.d.cuMemcpyDtoD(uint64(dst), uint64(src), uintptr(bytes)))
}

// MemsetD32 sets count 32-bit words at dst (which must be 4-byte aligned) to
// value (cuMemsetD32_v2): for float32 data, pass math.Float32bits(x).
func (c *Context) MemsetD32(dst DevicePtr, value uint32, count int) error {
	if count < 0 {
		return fmt.Errorf("cuda: MemsetD32 of %d words", count)
	}
	if count == 0 {
		return nil
	}
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return c.d.check("cuMemsetD32_v2", c.d.cuMemsetD32(uint64(dst), value, uintptr(count)))
}
