package cudadrv

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Timer measures GPU time on the default stream between Start and Stop with
// a pair of CUDA events (resolution about half a microsecond).
type Timer struct {
	ctx         *Context
	start, stop uintptr // CUevent
	closed      atomic.Bool
}

// NewTimer creates a Timer's two events (cuEventCreate with
// CU_EVENT_DEFAULT, so they record time). Close it when done.
func (c *Context) NewTimer() (*Timer, error) {
	leave, err := c.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	t := &Timer{ctx: c}
	if err := c.d.check("cuEventCreate", c.d.cuEventCreate(&t.start, 0)); err != nil {
		return nil, err
	}
	if err := c.d.check("cuEventCreate", c.d.cuEventCreate(&t.stop, 0)); err != nil {
		c.d.cuEventDestroy(t.start)
		return nil, err
	}
	return t, nil
}

// Start records the start event on the default stream: the time is taken
// when the GPU reaches it, after the work queued before.
func (t *Timer) Start() error {
	if t.closed.Load() {
		return ErrClosed
	}
	leave, err := t.ctx.enter()
	if err != nil {
		return err
	}
	defer leave()
	return t.ctx.d.check("cuEventRecord", t.ctx.d.cuEventRecord(t.start, 0))
}

// Stop records the stop event on the default stream, waits for it, and
// returns the GPU time from Start to Stop in milliseconds.
func (t *Timer) Stop() (ms float64, err error) {
	if t.closed.Load() {
		return 0, ErrClosed
	}
	c := t.ctx
	leave, err := c.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	if err := c.d.check("cuEventRecord", c.d.cuEventRecord(t.stop, 0)); err != nil {
		return 0, err
	}
	if err := c.d.check("cuEventSynchronize", c.d.cuEventSynchronize(t.stop)); err != nil {
		return 0, err
	}
	var f float32
	if err := c.d.check(c.d.elapsedName, c.d.cuEventElapsedTime(&f, t.start, t.stop)); err != nil {
		return 0, err
	}
	return float64(f), nil
}

// Close destroys the timer's events (cuEventDestroy_v2). It is idempotent.
func (t *Timer) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	c := t.ctx
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return errors.Join(
		c.d.check("cuEventDestroy_v2", c.d.cuEventDestroy(t.start)),
		c.d.check("cuEventDestroy_v2", c.d.cuEventDestroy(t.stop)))
}

// Time runs fn, which should queue GPU work on the default stream, between
// the events of a fresh Timer and returns the GPU time it took in
// milliseconds.
func (c *Context) Time(fn func() error) (ms float64, err error) {
	t, err := c.NewTimer()
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	if err := t.Start(); err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	return t.Stop()
}

// CopyBandwidth measures device memory bandwidth with device-to-device
// copies: it allocates two buffers of bytes each, copies one to the other
// once to warm up, then times reps copies (cuMemcpyDtoD_v2) with events. A
// copy reads and writes bytes each, so the result, in GB/s (10⁹ bytes per
// second), is 2·bytes·reps / time. Use buffers much larger than the L2
// cache (50 MiB on an H100), e.g. 256 MiB, to measure DRAM.
func (c *Context) CopyBandwidth(bytes, reps int) (gbps float64, err error) {
	if bytes <= 0 || reps <= 0 {
		return 0, fmt.Errorf("cuda: CopyBandwidth(%d bytes, %d reps)", bytes, reps)
	}
	src, err := c.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, c.Free(src)) }()
	dst, err := c.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, c.Free(dst)) }()

	// Touch both buffers, then one untimed copy.
	if err := c.MemsetD32(src, 0x3f800000, bytes/4); err != nil {
		return 0, err
	}
	if err := c.MemsetD32(dst, 0, bytes/4); err != nil {
		return 0, err
	}
	if err := c.CopyDtoD(dst, src, bytes); err != nil {
		return 0, err
	}
	if err := c.Synchronize(); err != nil {
		return 0, err
	}

	ms, err := c.Time(func() error {
		for range reps {
			if err := c.CopyDtoD(dst, src, bytes); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if ms <= 0 {
		return 0, fmt.Errorf("cuda: CopyBandwidth: %d copies of %d bytes timed at %g ms", reps, bytes, ms)
	}
	return 2 * float64(bytes) * float64(reps) / (ms * 1e-3) / 1e9, nil
}
