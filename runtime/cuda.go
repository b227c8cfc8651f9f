package runtime

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/runtime/cudadrv"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// The CUDA backend runs the optimizer's PTX kernel (<name>_step in
// <name>.ptx, see docs/kernels.md) through the CUDA driver API, which
// package cudadrv loads at run time (dlopen of libcuda.so.1 with purego, no
// cgo): the project builds and its tests run where there is no CUDA, and
// the first step there fails with an error that names the missing driver.
//
// It keeps one device buffer per flat buffer (theta, g, the states), copied
// from the host buffers when the backend starts and back into them by sync
// and close, so that checkpoints and a later backend see the values the
// device computed. Every call waits for the device, so an error from a
// kernel is reported by the call that launched it.

// CUDABlock is the number of threads per block of every kernel the CUDA
// backend launches, or the largest multiple of the warp a kernel's
// registers allow when that is less (cudadrv.Function.BlockFor).
const CUDABlock = 256

// nonFiniteKernel is the name of the entry point in nonFinitePTX.
const nonFiniteKernel = "fibergen_first_nonfinite"

// nonFinitePTX is the GPU side of the non-finite guard, written by hand:
//
//	fibergen_first_nonfinite(const float *g, u64 n, u64 *first)
//
// Each thread walks i = blockIdx.x·blockDim.x + threadIdx.x, i + stride, …
// (a grid-stride loop, so any 1-D grid covers g) while i < n and stops at
// its first entry whose exponent bits are all ones — NaN or ±Inf, tested on
// the bits so that no float comparison is involved — storing i into *first
// with an atomic minimum. The caller sets *first to 2^64-1 before the
// launch; it stays there when every entry is finite. A thread's indexes
// grow, so the minimum over threads is the first bad index.
//
// The instruction forms are those llc-14 (-march=nvptx64 -mcpu=sm_80) emits
// for the same loop written in LLVM IR (atomicrmw umin on an addrspace(1)
// i64 gives atom.global.min.u64); the pointers are converted to global
// addresses with cvta.to.global as nvcc does.
const nonFinitePTX = `//
// fibergen: the non-finite guard of the CUDA backend (runtime/cuda.go).
//

.version 7.0
.target sm_80
.address_size 64

.visible .entry fibergen_first_nonfinite(
	.param .u64 fibergen_first_nonfinite_g,
	.param .u64 fibergen_first_nonfinite_n,
	.param .u64 fibergen_first_nonfinite_first
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [fibergen_first_nonfinite_g];
	ld.param.u64 	%rd2, [fibergen_first_nonfinite_n];
	ld.param.u64 	%rd3, [fibergen_first_nonfinite_first];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd3;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd6, %r1, %r2;
	cvt.u64.u32 	%rd7, %r3;
	add.s64 	%rd6, %rd6, %rd7;
	mul.wide.u32 	%rd8, %r4, %r2;
$L_loop:
	setp.ge.u64 	%p1, %rd6, %rd2;
	@%p1 bra 	$L_done;
	shl.b64 	%rd9, %rd6, 2;
	add.s64 	%rd10, %rd4, %rd9;
	ld.global.u32 	%r5, [%rd10];
	and.b32 	%r6, %r5, 2139095040;
	setp.eq.s32 	%p2, %r6, 2139095040;
	@%p2 bra 	$L_found;
	add.s64 	%rd6, %rd6, %rd8;
	bra.uni 	$L_loop;
$L_found:
	atom.global.min.u64 	%rd11, [%rd5], %rd6;
$L_done:
	ret;
}
`

// cudaKernels is what every CUDA step needs, with or without the runtime's
// flat buffers: the primary context of the device, the step kernel, the
// guard kernel and the device word the guard writes its answer into.
type cudaKernels struct {
	name     string // the optimizer, for errors
	ctx      *cudadrv.Context
	mod      *cudadrv.Module
	step     *cudadrv.Function
	guardMod *cudadrv.Module
	guard    *cudadrv.Function
	first    cudadrv.DevicePtr // one u64
	sms      int
	nbuf     int // buffers the step kernel takes (theta, g, states)
	nscalar  int // float32 scalars it takes (host scalars, then sigma_w)
	// privNames are the privatize kernels the manifest names (norms,
	// scales, sum); privFns them, looked up at the first Privatize.
	privNames []string
	privFns   []*cudadrv.Function
	// blocks is each launched kernel's block size.
	blocks map[*cudadrv.Function]int
}

// openCUDAKernels reads the optimizer's PTX and refuses it unless it carries
// the manifest's ABI stamp (Manifest.CheckPTX), then loads the driver,
// retains the primary context of device o.opts.Device and loads the step
// kernel from the PTX and the guard kernel from nonFinitePTX.
func openCUDAKernels(o *Optimizer) (_ *cudaKernels, err error) {
	km := o.m.Kernels
	if km.StepKernel == "" || km.PTX == "" && o.files.ptx == nil {
		return nil, fmt.Errorf("runtime: the manifest of %s names no PTX file or step kernel", o.Name())
	}
	if nb := 2 + o.prog.NumStates(); len(o.m.Buffers) != nb {
		return nil, fmt.Errorf("runtime: the manifest of %s lists %d buffers, its IR has %d (theta, g and %d states)",
			o.Name(), len(o.m.Buffers), nb, nb-2)
	}
	if ns := o.prog.NumKernelScalars(); len(o.m.Scalars) != ns {
		return nil, fmt.Errorf("runtime: the manifest of %s lists %d scalars, its IR has %d (host scalars and sigma_w)",
			o.Name(), len(o.m.Scalars), ns)
	}

	ptx, path, err := o.files.readPTX(o.Name())
	if err != nil {
		return nil, err
	}
	if err := o.m.CheckPTX(ptx, path); err != nil { // before the driver sees it
		return nil, fmt.Errorf("runtime: %w", err)
	}
	drv, err := o.driver()
	if err != nil {
		return nil, err
	}
	count, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: %w", err)
	}
	if o.opts.Device < 0 || o.opts.Device >= count {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: device %d asked for, the driver (%s) sees %d device(s)",
			o.opts.Device, drv.Library(), count)
	}
	dev, err := drv.Device(o.opts.Device)
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: %w", err)
	}
	ctx, err := dev.Context()
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend on device %d (%s): %w", o.opts.Device, dev, err)
	}
	k := &cudaKernels{name: o.Name(), ctx: ctx, sms: dev.SMCount, nbuf: len(o.m.Buffers), nscalar: len(o.m.Scalars),
		blocks: map[*cudadrv.Function]int{}}
	if p := o.m.Kernels.Privatize; p != nil {
		k.privNames = p.Kernels
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, k.close())
		}
	}()

	if k.mod, err = ctx.LoadModule(ptx); err != nil {
		return nil, fmt.Errorf("runtime: loading %s on %s: %w", path, dev, err)
	}
	if k.step, err = k.mod.Function(km.StepKernel); err != nil {
		return nil, fmt.Errorf("runtime: %s: %w", path, err)
	}
	if k.guardMod, err = ctx.LoadModule([]byte(nonFinitePTX)); err != nil {
		return nil, fmt.Errorf("runtime: loading the non-finite guard kernel on %s: %w", dev, err)
	}
	if k.guard, err = k.guardMod.Function(nonFiniteKernel); err != nil {
		return nil, fmt.Errorf("runtime: the non-finite guard kernel: %w", err)
	}
	if k.first, err = ctx.Alloc(8); err != nil {
		return nil, fmt.Errorf("runtime: the CUDA backend of %s: %w", o.Name(), err)
	}
	return k, nil
}

// driver returns the CUDA driver of o's backend: libcuda's for CUDA, a
// new simulated device's for PTXSim.
func (o *Optimizer) driver() (*cudadrv.Driver, error) {
	if o.opts.Backend == PTXSim {
		_, drv, err := cudasim.New(cudasim.Config{})
		return drv, err
	}
	drv, err := cudadrv.Load()
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: loading the NVIDIA driver (libcuda) failed: %w", err)
	}
	return drv, nil
}

// firstNonFinite returns the smallest i < n such that the float32 at
// g + 4i is NaN or ±Inf, or -1. It waits for the device.
func (k *cudaKernels) firstNonFinite(g cudadrv.DevicePtr, n int) (int, error) {
	if n <= 0 {
		return -1, nil
	}
	if err := k.ctx.MemsetD32(k.first, math.MaxUint32, 2); err != nil {
		return 0, fmt.Errorf("runtime: the non-finite guard: %w", err)
	}
	if err := k.launch(k.guard, n, g, uint64(n), k.first); err != nil {
		return 0, fmt.Errorf("runtime: the non-finite guard: %w", err)
	}
	var first [1]uint64
	if err := cudadrv.CopyFromDevice(k.ctx, first[:], k.first); err != nil {
		return 0, fmt.Errorf("runtime: the non-finite guard: %w", err)
	}
	switch {
	case first[0] == math.MaxUint64:
		return -1, nil
	case first[0] >= uint64(n):
		return 0, fmt.Errorf("runtime: the non-finite guard returned index %d of %d", first[0], n)
	}
	return int(first[0]), nil
}

// launchStep runs the step kernel over n coordinates of the device buffers
// bufs (theta, g, states), the first at global index a.rg.Offset, and waits
// for it.
func (k *cudaKernels) launchStep(bufs []cudadrv.DevicePtr, n int, scalars []float32, rg hostkernel.Range) error {
	if len(bufs) != k.nbuf || len(scalars) != k.nscalar {
		return fmt.Errorf("runtime: %s_step takes %d buffers and %d scalars, got %d and %d",
			k.name, k.nbuf, k.nscalar, len(bufs), len(scalars))
	}
	if n <= 0 {
		return nil
	}
	// The exact parameter types of docs/kernels.md: a .u64 per buffer, a
	// .f32 per scalar, then i64 n, i64 offset, u64 seed, u32 step, u32 noise.
	args := make([]any, 0, len(bufs)+len(scalars)+5)
	for _, p := range bufs {
		args = append(args, p)
	}
	for _, s := range scalars {
		args = append(args, s)
	}
	args = append(args, int64(n), rg.Offset, rg.Seed, rg.Step, rg.Noise)
	// One Philox group of four per thread at most, plus the head and tail.
	return k.launch(k.step, n/4+4, args...)
}

// launch runs f over a grid-stride loop of threads threads (blocks of
// CUDABlock, or of the largest multiple of the warp f allows) and waits
// for it; no threads: no launch.
func (k *cudaKernels) launch(f *cudadrv.Function, threads int, args ...any) error {
	if threads <= 0 {
		return nil
	}
	block, ok := k.blocks[f]
	if !ok {
		b, err := f.BlockFor(CUDABlock)
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		k.blocks[f], block = b, b
	}
	grid := cudadrv.GridFor(threads, block, k.sms)
	if err := f.Launch([3]uint32{uint32(grid)}, [3]uint32{uint32(block)}, 0, args...); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if err := k.ctx.Synchronize(); err != nil {
		return fmt.Errorf("runtime: %s: %w", f.Name, err)
	}
	return nil
}

// readFloat returns the float32 at p.
func (k *cudaKernels) readFloat(p cudadrv.DevicePtr) (float32, error) {
	var v [1]float32
	err := k.ctx.CopyDtoH(v[:], p)
	return v[0], err
}

// close unloads the modules, frees the guard's word and releases the
// primary context. It may be called on a partly opened cudaKernels, and
// more than once.
func (k *cudaKernels) close() error {
	if k.ctx == nil {
		return nil
	}
	var errs []error
	if k.first != 0 {
		errs = append(errs, k.ctx.Free(k.first))
		k.first = 0
	}
	for _, m := range []*cudadrv.Module{k.guardMod, k.mod} {
		if m != nil {
			errs = append(errs, m.Unload())
		}
	}
	k.guardMod, k.mod, k.guard, k.step, k.privFns = nil, nil, nil, nil, nil
	errs = append(errs, k.ctx.Close())
	k.ctx = nil
	return errors.Join(errs...)
}

// cudaBackend steps the optimizer's flat buffers on the GPU: one device
// buffer per host buffer, n floats each.
type cudaBackend struct {
	backend Backend // CUDA or PTXSim
	k       *cudaKernels
	host    [][]float32 // the optimizer's host buffers (o.bufs), len n each
	n       int
	dev     []cudadrv.DevicePtr
}

// newCUDABackend starts the CUDA backend: the kernels, then a device copy
// of every host buffer.
func newCUDABackend(o *Optimizer) (_ backend, err error) {
	k, err := openCUDAKernels(o)
	if err != nil {
		return nil, err
	}
	b := &cudaBackend{backend: o.opts.Backend, k: k, host: o.bufs, n: len(o.bufs[0])}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.release())
		}
	}()
	if len(b.host) != k.nbuf {
		return nil, fmt.Errorf("runtime: %s has %d buffers, its kernel takes %d", o.Name(), len(b.host), k.nbuf)
	}
	for i, h := range b.host {
		if len(h) != b.n {
			return nil, fmt.Errorf("runtime: buffer %d of %s holds %d values, want %d", i, o.Name(), len(h), b.n)
		}
		// At least one element: the driver refuses empty allocations.
		p, err := k.ctx.Alloc(4 * max(b.n, 1))
		if err != nil {
			return nil, fmt.Errorf("runtime: allocating %s (%d floats) on the device: %w", o.m.Buffers[i].Name, b.n, err)
		}
		b.dev = append(b.dev, p)
		if err := k.ctx.CopyHtoD(p, h); err != nil {
			return nil, fmt.Errorf("runtime: copying %s to the device: %w", o.m.Buffers[i].Name, err)
		}
	}
	return b, nil
}

func (b *cudaBackend) kind() Backend { return b.backend }

// step launches the step on the device buffers.
func (b *cudaBackend) step(a stepArgs) error { return b.k.launchSegments(b.dev, a) }

// launchSegments launches the step once per segment, on the buffers bufs
// from the segment's start, with its global offset.
func (k *cudaKernels) launchSegments(bufs []cudadrv.DevicePtr, a stepArgs) error {
	for _, s := range a.segs {
		rg := a.rg
		rg.Offset += int64(s.lo)
		if err := k.launchStep(offsetPtrs(bufs, s.lo), s.hi-s.lo, s.scalars, rg); err != nil {
			return err
		}
	}
	return nil
}

// offsetPtrs is the device buffers from element lo on.
func offsetPtrs(dev []cudadrv.DevicePtr, lo int) []cudadrv.DevicePtr {
	out := make([]cudadrv.DevicePtr, len(dev))
	for i, p := range dev {
		out[i] = p.Add(4 * lo)
	}
	return out
}

func (b *cudaBackend) check(buf, off, n int) error {
	if buf < 0 || buf >= len(b.dev) {
		return fmt.Errorf("runtime: no buffer %d (of %d)", buf, len(b.dev))
	}
	if off < 0 || n < 0 || off > b.n-n {
		return fmt.Errorf("runtime: [%d, %d) of a buffer of %d", off, off+n, b.n)
	}
	return nil
}

func (b *cudaBackend) read(buf, off, n int) ([]float32, error) {
	if err := b.check(buf, off, n); err != nil {
		return nil, fmt.Errorf("%w: read", err)
	}
	out := make([]float32, n)
	if err := b.k.ctx.CopyDtoH(out, b.dev[buf].Add(4*off)); err != nil {
		return nil, fmt.Errorf("runtime: reading from the device: %w", err)
	}
	return out, nil
}

func (b *cudaBackend) write(buf, off int, src []float32) error {
	if err := b.check(buf, off, len(src)); err != nil {
		return fmt.Errorf("%w: write", err)
	}
	if err := b.k.ctx.CopyHtoD(b.dev[buf].Add(4*off), src); err != nil {
		return fmt.Errorf("runtime: writing to the device: %w", err)
	}
	return nil
}

// sync copies every device buffer into its host buffer.
func (b *cudaBackend) sync() error {
	for i, p := range b.dev {
		if err := b.k.ctx.CopyDtoH(b.host[i], p); err != nil {
			return fmt.Errorf("runtime: copying buffer %d from the device: %w", i, err)
		}
	}
	return nil
}

// close copies the device buffers back into the host buffers, then frees
// them and releases the kernels and the context, even when the copy fails.
func (b *cudaBackend) close() error {
	if b.k == nil {
		return nil
	}
	var err error
	if len(b.dev) == len(b.host) {
		err = b.sync()
	}
	return errors.Join(err, b.release())
}

// release frees the device buffers and closes the kernels.
func (b *cudaBackend) release() error {
	if b.k == nil {
		return nil
	}
	var errs []error
	for _, p := range b.dev {
		errs = append(errs, b.k.ctx.Free(p))
	}
	b.dev = nil
	errs = append(errs, b.k.close())
	b.k = nil
	return errors.Join(errs...)
}

// readPTX returns the PTX module and where it comes from.
func (f kernelFiles) readPTX(name string) ([]byte, string, error) {
	switch {
	case f.ptx != nil:
		return f.ptx, "the PTX of " + name, nil
	case f.ptxPath == "":
		return nil, "", fmt.Errorf("runtime: the CUDA backend of %s needs its PTX: open the directory fibergen build wrote with Open, or give Compiled.PTX", name)
	}
	ptx, err := os.ReadFile(f.ptxPath)
	if err != nil {
		return nil, "", fmt.Errorf("runtime: the CUDA backend of %s: %w", name, err)
	}
	return ptx, f.ptxPath, nil
}
