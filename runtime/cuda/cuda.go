// Package cuda is the runtime's CUDA backend (backend.Backend): it runs an
// optimizer's PTX kernels (<name>_step, the privatize and diagnostic
// kernels of <name>.ptx, docs/kernels.md) and its own non-finite guard
// through the CUDA driver API of package cudadrv, which loads libcuda at run
// time (dlopen with purego, no cgo): the project builds and its tests run
// where there is no CUDA, and the first step there fails with an error that
// names the missing driver. The driver is injected (Config.Driver): the
// simulated device of internal/cudasim runs the same code where there is
// no GPU, wired in by the tests and the command line, never linked here.
//
// The backend keeps one device buffer per flat buffer (theta, g, the
// states), copied from the runtime's host buffers when it starts and back
// into them by Sync and Close, so that checkpoints and a later backend see
// the values the device computed; Memory.Device runs the same kernels on
// the trainer's device buffers instead. Every call waits for the device,
// so an error from a kernel is reported by the call that launched it.
package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// Block is the number of threads per block of every kernel the backend
// launches, or the largest multiple of the warp a kernel's registers allow
// when that is less (cudadrv.Function.BlockFor).
const Block = 256

// Config is what Open needs.
type Config struct {
	Name     string             // what Backend.Name reports: "cuda", or "ptxsim" on the simulator
	Manifest *manifest.Manifest // the optimizer's, which names the kernels
	PTX      []byte             // its PTX module
	Source   string             // where the PTX came from, for errors
	Device   int                // the device ordinal
	Driver   *cudadrv.Driver    // nil: cudadrv.Load (libcuda)
	// Host are the runtime's host buffers in ABI order, N values each,
	// which the device buffers start from and Sync copies back into.
	Host []backend.Host
	N    int
	// Storages are the buffers' storage in ABI order (ir.Buffers).
	Storages []ir.Storage
}

// Backend steps the optimizer's flat buffers on a CUDA device: one device
// buffer per host buffer, n floats each.
type Backend struct {
	name string
	k    *kernels
	host []backend.Host
	n    int
	dev  []cudadrv.DevicePtr
	// storages are the buffers' storage (Config.Storages): a state stored
	// as a 16-bit type has 2-byte values, own or the trainer's.
	storages []ir.Storage
	// scratch is device memory that the kernels' partials go through
	// (reduction pass, diagnostics).
	scratch deviceScratch
	// kept is the gradient the last reduction pass kept.
	kept backend.KeptGradient[deviceScratch]
}

// deviceScratch is device memory kept between steps and grown when a call
// needs more.
type deviceScratch struct {
	ptr   cudadrv.DevicePtr
	bytes int
}

// grow returns the scratch memory, at least bytes long.
func (s *deviceScratch) grow(ctx *cudadrv.Context, bytes int) (cudadrv.DevicePtr, error) {
	if bytes <= s.bytes {
		return s.ptr, nil
	}
	if err := s.free(ctx); err != nil {
		return 0, err
	}
	p, err := ctx.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	s.ptr, s.bytes = p, bytes
	return p, nil
}

// free releases the memory, if any.
func (s *deviceScratch) free(ctx *cudadrv.Context) error {
	if s.bytes == 0 {
		return nil
	}
	err := ctx.Free(s.ptr)
	s.ptr, s.bytes = 0, 0
	return err
}

var _ backend.Backend = (*Backend)(nil)

// Open starts the backend: it refuses a PTX module without the manifest's
// ABI stamp (manifest.Manifest.CheckPTX), loads the driver, retains the
// primary context of the device, loads the kernels, then makes a device
// copy of every host buffer.
func Open(cfg Config) (_ *Backend, err error) {
	if err := cfg.Manifest.CheckPTX(cfg.PTX, cfg.Source); err != nil { // before the driver sees it
		return nil, fmt.Errorf("runtime: %w", err)
	}
	drv := cfg.Driver
	if drv == nil {
		if drv, err = cudadrv.Load(); err != nil {
			return nil, fmt.Errorf("runtime: cannot start the CUDA backend: loading the NVIDIA driver (libcuda) failed: %w", err)
		}
	}
	k, err := openKernels(cfg, drv)
	if err != nil {
		return nil, err
	}
	b := &Backend{name: cfg.Name, k: k, host: cfg.Host, n: cfg.N, storages: cfg.Storages}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.release())
		}
	}()
	if len(b.host) != k.nbuf || len(b.storages) != k.nbuf {
		return nil, fmt.Errorf("runtime: %s has %d buffers (%d storages), its kernel takes %d", k.name, len(b.host), len(b.storages), k.nbuf)
	}
	for i, h := range b.host {
		if err := b.copyIn(cfg.Manifest.Buffers[i].Name, h); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// copyIn allocates the device copy of host buffer h and copies h into it.
func (b *Backend) copyIn(name string, h backend.Host) error {
	if h.Len() != b.n {
		return fmt.Errorf("runtime: buffer %s of %s holds %d values, want %d", name, b.k.name, h.Len(), b.n)
	}
	// At least one element: the driver refuses empty allocations.
	p, err := b.k.ctx.Alloc(h.Size() * max(b.n, 1))
	if err != nil {
		return fmt.Errorf("runtime: allocating %s (%d values) on the device: %w", name, b.n, err)
	}
	b.dev = append(b.dev, p)
	if err := copyHost(b.k.ctx, p, h, true); err != nil {
		return fmt.Errorf("runtime: copying %s to the device: %w", name, err)
	}
	return nil
}

// copyHost copies host buffer h to device memory p (toDevice) or back.
func copyHost(ctx *cudadrv.Context, p cudadrv.DevicePtr, h backend.Host, toDevice bool) error {
	switch {
	case h.Narrow() && toDevice:
		return cudadrv.CopyToDevice(ctx, p, h.U16)
	case h.Narrow():
		return cudadrv.CopyFromDevice(ctx, h.U16, p)
	case toDevice:
		return ctx.CopyHtoD(p, h.F32)
	}
	return ctx.CopyDtoH(h.F32, p)
}

// Name is Config.Name.
func (b *Backend) Name() string { return b.name }

// Kernel is "": one PTX module serves every device.
func (b *Backend) Kernel() string { return "" }

// buffers returns m's device buffers and their length.
func (b *Backend) buffers(m backend.Memory) ([]cudadrv.DevicePtr, int) {
	if m.Own() {
		return b.dev, b.n
	}
	out := make([]cudadrv.DevicePtr, len(m.Device))
	for i, p := range m.Device {
		out[i] = cudadrv.DevicePtr(p)
	}
	return out, m.N
}

// Step launches the step once per segment, on the buffers from the
// segment's start, with its global offset.
func (b *Backend) Step(m backend.Memory, s backend.Step) error {
	bufs, n := b.buffers(m)
	for _, seg := range s.Segments { // every segment checked before the first launch
		if err := b.k.checkStep(len(bufs), seg, n); err != nil {
			return err
		}
	}
	if kept, err := b.kept.Take(s); err != nil {
		return err
	} else if kept {
		bufs = slices.Clone(bufs)
		bufs[ir.GradBuffer] = b.kept.Buf.ptr
	}
	for _, seg := range s.Segments {
		if err := b.k.launchStep(b.offsetPtrs(bufs, seg.Lo), seg.Hi-seg.Lo, seg.Scalars, s, s.Offset+int64(seg.Lo)); err != nil {
			return &backend.FaultError{Err: err}
		}
	}
	return nil
}

// offsetPtrs is the device buffers (in ABI order) from value lo on.
func (b *Backend) offsetPtrs(dev []cudadrv.DevicePtr, lo int) []cudadrv.DevicePtr {
	out := make([]cudadrv.DevicePtr, len(dev))
	for i, p := range dev {
		out[i] = p.Add(b.storages[i].DType.Size() * lo)
	}
	return out
}

// FirstNonFinite runs the guard kernel over m's gradient buffer and reads
// the first non-finite entry back.
func (b *Backend) FirstNonFinite(m backend.Memory) (int, float32, error) {
	bufs, n := b.buffers(m)
	g := bufs[ir.GradBuffer]
	bad, err := b.k.firstNonFinite(g, n)
	if err != nil || bad < 0 {
		return bad, 0, err
	}
	v, err := b.k.readFloat(g.Add(4 * bad))
	if err != nil {
		return 0, 0, fmt.Errorf("runtime: reading the non-finite gradient entry %d: %w", bad, err)
	}
	return bad, v, nil
}

// Fill sets buffer buf of m to v and waits.
func (b *Backend) Fill(m backend.Memory, buf int, v float32) error {
	bufs, n := b.buffers(m)
	if buf < 0 || buf >= len(bufs) {
		return fmt.Errorf("runtime: no buffer %d (of %d)", buf, len(bufs))
	}
	if n == 0 {
		return nil
	}
	if d := b.storages[buf].DType; d.Narrow() {
		if err := b.fill16(bufs[buf], n, rng.Bits(d, v)); err != nil {
			return err
		}
	} else if err := b.k.ctx.MemsetD32(bufs[buf], math.Float32bits(v), n); err != nil {
		return err
	}
	return b.k.ctx.Synchronize()
}

// fill16 sets the n 16-bit values at p to h: two a 32-bit word from the
// first 4-byte-aligned one (a memset needs the alignment; p is 2-byte
// aligned, a range of a buffer may start at an odd value), the values
// before and after it one by one.
func (b *Backend) fill16(p cudadrv.DevicePtr, n int, h uint16) error {
	one := func(at cudadrv.DevicePtr) error { return cudadrv.CopyToDevice(b.k.ctx, at, []uint16{h}) }
	if p%4 != 0 {
		if err := one(p); err != nil {
			return err
		}
		p, n = p.Add(2), n-1
	}
	if n%2 == 1 {
		if err := one(p.Add(2 * (n - 1))); err != nil {
			return err
		}
	}
	if n < 2 {
		return nil
	}
	return b.k.ctx.MemsetD32(p, uint32(h)|uint32(h)<<16, n/2)
}

func (b *Backend) check(buf, off, n int) error {
	if buf < 0 || buf >= len(b.dev) {
		return fmt.Errorf("runtime: no buffer %d (of %d)", buf, len(b.dev))
	}
	if off < 0 || n < 0 || off > b.n-n {
		return fmt.Errorf("runtime: [%d, %d) of a buffer of %d", off, off+n, b.n)
	}
	return nil
}

// Read copies values [off, off+n) of device buffer buf to the host, as
// float32s (a 16-bit state's widened).
func (b *Backend) Read(buf, off, n int) ([]float32, error) {
	if err := b.check(buf, off, n); err != nil {
		return nil, fmt.Errorf("%w: read", err)
	}
	h := b.staging(buf, n)
	if err := copyHost(b.k.ctx, b.dev[buf].Add(h.Size()*off), h, false); err != nil {
		return nil, fmt.Errorf("runtime: reading from the device: %w", err)
	}
	return h.Values(0, n)
}

// Write copies src into device buffer buf from off (a 16-bit state's
// values narrowed: each must be one of its type's).
func (b *Backend) Write(buf, off int, src []float32) error {
	if err := b.check(buf, off, len(src)); err != nil {
		return fmt.Errorf("%w: write", err)
	}
	h := b.staging(buf, len(src))
	if err := h.SetValues(0, src); err != nil {
		return err
	}
	if err := copyHost(b.k.ctx, b.dev[buf].Add(h.Size()*off), h, true); err != nil {
		return fmt.Errorf("runtime: writing to the device: %w", err)
	}
	return nil
}

// staging is a host buffer of n values stored as buffer buf's.
func (b *Backend) staging(buf, n int) backend.Host {
	if d := b.storages[buf].DType; d.Narrow() {
		return backend.Host{DType: d, U16: make([]uint16, n)}
	}
	return backend.Float32s(make([]float32, n))
}

// Sync copies every device buffer into its host buffer.
func (b *Backend) Sync() error {
	for i, p := range b.dev {
		if err := copyHost(b.k.ctx, p, b.host[i], false); err != nil {
			return fmt.Errorf("runtime: copying buffer %d from the device: %w", i, err)
		}
	}
	return nil
}

// Rebind is refused: the backend steps device copies of its own.
func (b *Backend) Rebind([]backend.Host) error {
	return fmt.Errorf("runtime: the %s backend steps device copies of its buffers; it takes no host buffers of the trainer's", b.name)
}

// Close copies the device buffers back into the host buffers, then frees
// them and releases the kernels and the context, even when the copy fails.
func (b *Backend) Close() error {
	if b.k == nil {
		return nil
	}
	var err error
	if len(b.dev) == len(b.host) {
		err = b.Sync()
	}
	return errors.Join(err, b.release())
}

// release frees the device buffers and closes the kernels.
func (b *Backend) release() error {
	if b.k == nil {
		return nil
	}
	var errs []error
	for _, p := range b.dev {
		errs = append(errs, b.k.ctx.Free(p))
	}
	errs = append(errs, b.scratch.free(b.k.ctx), b.kept.Buf.free(b.k.ctx))
	b.dev = nil
	errs = append(errs, b.k.close())
	b.k = nil
	return errors.Join(errs...)
}

// CopyBandwidth is the baseline a CUDA step is measured against: the
// bandwidth in GB/s (10^9 bytes) of a device-to-device copy of half bytes
// into the other half on device device of drv (nil: cudadrv.Load), over
// reps copies, and the device's name.
func CopyBandwidth(drv *cudadrv.Driver, device, half, reps int) (gbps float64, name string, err error) {
	if drv == nil {
		if drv, err = cudadrv.Load(); err != nil {
			return 0, "", fmt.Errorf("runtime: %w", err)
		}
	}
	dev, err := drv.Device(device)
	if err != nil {
		return 0, "", fmt.Errorf("runtime: %w", err)
	}
	ctx, err := dev.Context()
	if err != nil {
		return 0, "", fmt.Errorf("runtime: %w", err)
	}
	defer ctx.Close()
	gbps, err = ctx.CopyBandwidth(half, reps)
	if err != nil {
		return 0, "", fmt.Errorf("runtime: %w", err)
	}
	return gbps, dev.Name, nil
}
