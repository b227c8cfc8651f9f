package cuda

import (
	"errors"
	"fmt"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// Privatize runs the privatize kernels: on the trainer's device rows into
// its device memory where j.Device is set, else on host rows, copied into
// device buffers made for the call, into the device gradient buffer.
func (b *Backend) Privatize(j backend.Privatize) (_ []float32, err error) {
	if j.Segments != nil {
		return nil, fmt.Errorf("runtime: the %s backend reads per-example gradients as one matrix, not in segments", b.name)
	}
	tmp := &scratch{ctx: b.k.ctx}
	defer func() { err = errors.Join(err, tmp.free()) }()
	if j.Device != nil {
		return b.privatizeOn(j, cudadrv.DevicePtr(j.Device.Cur), cudadrv.DevicePtr(j.Device.Look), cudadrv.DevicePtr(j.Device.Out), tmp)
	}
	if j.Out != nil {
		return nil, fmt.Errorf("runtime: the %s backend privatizes into its device gradient, not into host memory", b.name)
	}
	cur, err := tmp.upload(j.Cur, len(j.Cur))
	if err != nil {
		return nil, err
	}
	var look cudadrv.DevicePtr
	if j.Mode == 1 {
		if look, err = tmp.upload(j.Look, len(j.Look)); err != nil {
			return nil, err
		}
	}
	return b.privatizeOn(j, cur, look, b.dev[ir.GradBuffer], tmp)
}

// privatizeOn runs the privatize kernels on device rows cur and look into
// out: the norms and scales kernels unless j has its scales, whose values
// come back for the non-finite check, then the sum kernel.
func (b *Backend) privatizeOn(j backend.Privatize, cur, look, out cudadrv.DevicePtr, tmp *scratch) ([]float32, error) {
	fns, err := b.k.privatizeFuncs()
	if err != nil {
		return nil, err
	}
	scales, err := tmp.upload(j.Scales, j.Batch)
	if err != nil {
		return nil, err
	}
	if j.Scales == nil {
		if j.Scales, err = b.deviceScales(fns, j, cur, look, scales, tmp); err != nil || j.ScalesOnly {
			return j.Scales, err
		}
	}
	err = b.k.launch(fns[2], j.N/4+4, cur, look, scales, out, int64(j.Batch), int64(j.N), j.A, j.B, j.Divisor, j.Mode)
	return j.Scales, err
}

// scratch is the device memory of one privatization, freed after it.
type scratch struct {
	ctx  *cudadrv.Context
	bufs []cudadrv.DevicePtr
}

// upload allocates n floats (at least one: the driver refuses empty
// allocations) and copies h into them.
func (s *scratch) upload(h []float32, n int) (cudadrv.DevicePtr, error) {
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

func (s *scratch) free() error {
	var errs []error
	for _, p := range s.bufs {
		errs = append(errs, s.ctx.Free(p))
	}
	return errors.Join(errs...)
}

// deviceScales runs the norms and scales kernels and returns the scales,
// or a *backend.NonFiniteExampleError.
func (b *Backend) deviceScales(fns []*cudadrv.Function, j backend.Privatize, cur, look, scales cudadrv.DevicePtr,
	tmp *scratch) ([]float32, error) {
	nchunks := reduce.ReduceChunks(j.N)
	partials, err := tmp.upload(nil, j.Batch*nchunks)
	if err != nil {
		return nil, err
	}
	if err := b.k.launch(fns[0], 32*j.Batch*nchunks, cur, look, partials, int64(j.Batch), int64(j.N), j.A, j.B, j.Mode); err != nil {
		return nil, err
	}
	if err := b.k.launch(fns[1], j.Batch, partials, scales, int64(j.Batch), int64(nchunks), j.Clip); err != nil {
		return nil, err
	}
	out := make([]float32, j.Batch)
	if err := b.k.ctx.CopyDtoH(out, scales); err != nil {
		return nil, fmt.Errorf("runtime: privatize: reading the scales: %w", err)
	}
	if bad := backend.FirstNaN(out); bad >= 0 {
		return nil, &backend.NonFiniteExampleError{Example: bad}
	}
	return out, nil
}

// privatizeFuncs looks up the privatize kernels in the module, once.
func (k *kernels) privatizeFuncs() ([]*cudadrv.Function, error) {
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
