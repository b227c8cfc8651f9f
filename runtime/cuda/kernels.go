package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// kernels is what every CUDA step needs, with or without the runtime's
// flat buffers: the primary context of the device, the step kernel, the
// guard kernel and the device word the guard writes its answer into.
type kernels struct {
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

// openKernels retains the primary context of device cfg.Device of drv and
// loads the step kernel from cfg.PTX and the guard kernel from
// nonFinitePTX.
func openKernels(cfg Config, drv *cudadrv.Driver) (_ *kernels, err error) {
	m := cfg.Manifest
	count, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: %w", err)
	}
	if cfg.Device < 0 || cfg.Device >= count {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: device %d asked for, the driver (%s) sees %d device(s)",
			cfg.Device, drv.Library(), count)
	}
	dev, err := drv.Device(cfg.Device)
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend: %w", err)
	}
	ctx, err := dev.Context()
	if err != nil {
		return nil, fmt.Errorf("runtime: cannot start the CUDA backend on device %d (%s): %w", cfg.Device, dev, err)
	}
	k := &kernels{name: m.Optimizer, ctx: ctx, sms: dev.SMCount, nbuf: len(m.Buffers), nscalar: len(m.Scalars),
		blocks: map[*cudadrv.Function]int{}}
	if p := m.Kernels.Privatize; p != nil {
		k.privNames = p.Kernels
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, k.close())
		}
	}()

	if k.mod, err = ctx.LoadModule(cfg.PTX); err != nil {
		return nil, fmt.Errorf("runtime: loading %s on %s: %w", cfg.Source, dev, err)
	}
	if k.step, err = k.mod.Function(m.Kernels.StepKernel); err != nil {
		return nil, fmt.Errorf("runtime: %s: %w", cfg.Source, err)
	}
	if k.guardMod, err = ctx.LoadModule([]byte(nonFinitePTX)); err != nil {
		return nil, fmt.Errorf("runtime: loading the non-finite guard kernel on %s: %w", dev, err)
	}
	if k.guard, err = k.guardMod.Function(nonFiniteKernel); err != nil {
		return nil, fmt.Errorf("runtime: the non-finite guard kernel: %w", err)
	}
	if k.first, err = ctx.Alloc(8); err != nil {
		return nil, fmt.Errorf("runtime: the CUDA backend of %s: %w", m.Optimizer, err)
	}
	return k, nil
}

// firstNonFinite returns the smallest i < n such that the float32 at
// g + 4i is NaN or ±Inf, or -1. It waits for the device.
func (k *kernels) firstNonFinite(g cudadrv.DevicePtr, n int) (int, error) {
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

// checkStep refuses a segment the step kernel cannot run over nbuf
// buffers of n floats.
func (k *kernels) checkStep(nbuf int, seg backend.Segment, n int) error {
	if nbuf != k.nbuf || len(seg.Scalars) != k.nscalar {
		return fmt.Errorf("runtime: %s_step takes %d buffers and %d scalars, got %d and %d",
			k.name, k.nbuf, k.nscalar, nbuf, len(seg.Scalars))
	}
	if seg.Lo < 0 || seg.Lo > seg.Hi || seg.Hi > n {
		return fmt.Errorf("runtime: %s_step: segment [%d, %d) outside the buffers' %d floats", k.name, seg.Lo, seg.Hi, n)
	}
	return nil
}

// launchStep runs the step kernel over n coordinates of the device buffers
// bufs (theta, g, states), the first at global index offset, and waits for
// it (checkStep has checked the arguments).
func (k *kernels) launchStep(bufs []cudadrv.DevicePtr, n int, scalars []float32, s backend.Step, offset int64) error {
	if n <= 0 {
		return nil
	}
	// The exact parameter types of docs/kernels.md: a .u64 per buffer, a
	// .f32 per scalar, then i64 n, i64 offset, u64 seed, u32 step, u32 noise
	// (the mode), u64 key0..key3.
	args := make([]any, 0, len(bufs)+len(scalars)+9)
	for _, p := range bufs {
		args = append(args, p)
	}
	for _, s := range scalars {
		args = append(args, s)
	}
	nz := s.Noise
	args = append(args, int64(n), offset, nz.Seed, nz.Step, uint32(nz.Mode), nz.Key[0], nz.Key[1], nz.Key[2], nz.Key[3])
	// One Philox group of four per thread at most, plus the head and tail
	// (a secure octet of eight needs half the threads; the rest find none).
	return k.launch(k.step, n/4+4, args...)
}

// launch runs f over a grid-stride loop of threads threads (blocks of
// Block, or of the largest multiple of the warp f allows) and waits for
// it; no threads: no launch.
func (k *kernels) launch(f *cudadrv.Function, threads int, args ...any) error {
	if threads <= 0 {
		return nil
	}
	block, ok := k.blocks[f]
	if !ok {
		b, err := f.BlockFor(Block)
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
func (k *kernels) readFloat(p cudadrv.DevicePtr) (float32, error) {
	var v [1]float32
	err := k.ctx.CopyDtoH(v[:], p)
	return v[0], err
}

// close unloads the modules, frees the guard's word and releases the
// primary context. It may be called on a partly opened kernels, and more
// than once.
func (k *kernels) close() error {
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
