package runtime

import (
	"errors"
	"fmt"

	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// PrivatizeDevice is PrivatizeTo on device memory the trainer owns (as
// for StepDevice): cur and, for a two-point optimizer, look (0: none) hold
// k rows of n float32s each, and the clipped sum over DP.BatchSize goes
// into the n floats at out; scales nil has them computed and checked (an
// example that is not finite is a *NonFiniteExampleError, and out is
// unchanged), else they are used as given — a non-finite row then reaches
// out, where the step's guard refuses it. It waits for the device.
func (o *Optimizer) PrivatizeDevice(out cudadrv.DevicePtr, n int, cur, look cudadrv.DevicePtr, k int, scales []float32) (_ PrivatizeStats, err error) {
	defer o.lock()()
	if o.dp == nil {
		return PrivatizeStats{}, errors.New("runtime: set the DP settings (SetDP) before PrivatizeDevice: they give C and B")
	}
	if n < 0 || k < 0 || n > 0 && out == 0 || n > 0 && k > 0 && cur == 0 {
		return PrivatizeStats{}, fmt.Errorf("runtime: PrivatizeDevice: %d examples of %d values at %#x into %#x", k, n, uint64(cur), uint64(out))
	}
	kern, err := o.deviceKernels()
	if err != nil {
		return PrivatizeStats{}, err
	}
	j, lookOnly, err := o.privShape(k, n, look != 0)
	if err == nil && scales != nil {
		err = checkScales(scales, k)
	}
	if err != nil {
		return PrivatizeStats{}, err
	}
	cur, look = rowsRead(j, lookOnly, cur, look)
	j.scales = scales
	tmp := &deviceScratch{ctx: kern.ctx}
	defer func() { err = errors.Join(err, tmp.free()) }()
	got, err := o.back.(*cudaBackend).privatizeOn(j, cur, look, out, tmp)
	if err != nil {
		return PrivatizeStats{}, err
	}
	o.privatized(deviceRange(out, n), false)
	return statsOf(got), nil
}

// privatize runs j on the GPU: the rows are copied into device buffers
// made for the call, then privatizeOn writes the clipped sum into the
// device gradient buffer.
func (b *cudaBackend) privatize(j privJob) (_ []float32, err error) {
	tmp := &deviceScratch{ctx: b.k.ctx}
	defer func() { err = errors.Join(err, tmp.free()) }()
	cur, err := tmp.upload(j.cur, len(j.cur))
	if err != nil {
		return nil, err
	}
	var look cudadrv.DevicePtr
	if j.mode == 1 {
		if look, err = tmp.upload(j.look, len(j.look)); err != nil {
			return nil, err
		}
	}
	return b.privatizeOn(j, cur, look, b.dev[1], tmp)
}

// privatizeOn runs the privatize kernels on device rows cur and look into
// out: the norms and scales kernels unless j has its scales, whose values
// come back for the non-finite check, then the sum kernel.
func (b *cudaBackend) privatizeOn(j privJob, cur, look, out cudadrv.DevicePtr, tmp *deviceScratch) ([]float32, error) {
	fns, err := b.k.privatizeFuncs()
	if err != nil {
		return nil, err
	}
	scales, err := tmp.upload(j.scales, j.batch)
	if err != nil {
		return nil, err
	}
	if j.scales == nil {
		if j.scales, err = b.deviceScales(fns, j, cur, look, scales, tmp); err != nil {
			return nil, err
		}
	}
	err = b.k.launch(fns[2], j.n/4+4, cur, look, scales, out, int64(j.batch), int64(j.n), j.a, j.b, j.divisor, j.mode)
	return j.scales, err
}

// deviceScratch is the device memory of one privatization, freed after it.
type deviceScratch struct {
	ctx  *cudadrv.Context
	bufs []cudadrv.DevicePtr
}

// upload allocates n floats (at least one: the driver refuses empty
// allocations) and copies h into them.
func (s *deviceScratch) upload(h []float32, n int) (cudadrv.DevicePtr, error) {
	p, err := s.ctx.Alloc(4 * max(n, 1))
	if err != nil {
		return 0, fmt.Errorf("runtime: privatize: allocating %d floats on the device: %w", n, err)
	}
	s.bufs = append(s.bufs, p)
	if len(h) > 0 {
		err = s.ctx.CopyHtoD(p, h)
	}
	return p, err
}

func (s *deviceScratch) free() error {
	var errs []error
	for _, p := range s.bufs {
		errs = append(errs, s.ctx.Free(p))
	}
	return errors.Join(errs...)
}

// deviceScales runs the norms and scales kernels and returns the scales,
// or a *NonFiniteExampleError.
func (b *cudaBackend) deviceScales(fns []*cudadrv.Function, j privJob, cur, look, scales cudadrv.DevicePtr,
	tmp *deviceScratch) ([]float32, error) {
	nchunks := reduce.ReduceChunks(j.n)
	partials, err := tmp.upload(nil, j.batch*nchunks)
	if err != nil {
		return nil, err
	}
	if err := b.k.launch(fns[0], 32*j.batch*nchunks, cur, look, partials, int64(j.batch), int64(j.n), j.a, j.b, j.mode); err != nil {
		return nil, err
	}
	if err := b.k.launch(fns[1], j.batch, partials, scales, int64(j.batch), int64(nchunks), j.clip); err != nil {
		return nil, err
	}
	out := make([]float32, j.batch)
	if err := b.k.ctx.CopyDtoH(out, scales); err != nil {
		return nil, fmt.Errorf("runtime: privatize: reading the scales: %w", err)
	}
	if bad := firstNaN(out); bad >= 0 {
		return nil, &NonFiniteExampleError{Example: bad}
	}
	return out, nil
}

// privatizeFuncs looks up the privatize kernels in the module, once.
func (k *cudaKernels) privatizeFuncs() ([]*cudadrv.Function, error) {
	if k.privFns != nil {
		return k.privFns, nil
	}
	if len(k.privNames) != 3 {
		return nil, fmt.Errorf("runtime: the manifest of %s names no privatize kernels: rebuild it with fibergen build", k.name)
	}
	var fns []*cudadrv.Function
	for _, name := range k.privNames {
		f, err := k.mod.Function(name)
		if err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
		fns = append(fns, f)
	}
	k.privFns = fns
	return fns, nil
}
