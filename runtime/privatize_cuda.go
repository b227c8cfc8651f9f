package runtime

import (
	"errors"
	"fmt"

	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// privatize runs j on the GPU: the rows are copied into device buffers
// made for the call, the norms and scales kernels run, the scales come
// back for the non-finite check, and the sum kernel writes the clipped sum
// over the divisor into the device gradient buffer.
func (b *cudaBackend) privatize(j privJob) (_ []float32, err error) {
	fns, err := b.k.privatizeFuncs()
	if err != nil {
		return nil, err
	}
	var bufs []cudadrv.DevicePtr
	defer func() {
		for _, p := range bufs {
			err = errors.Join(err, b.k.ctx.Free(p))
		}
	}()
	upload := func(h []float32, n int) (cudadrv.DevicePtr, error) {
		p, err := b.k.ctx.Alloc(4 * max(n, 1))
		if err != nil {
			return 0, fmt.Errorf("runtime: privatize: allocating %d floats on the device: %w", n, err)
		}
		bufs = append(bufs, p)
		if len(h) > 0 {
			err = b.k.ctx.CopyHtoD(p, h)
		}
		return p, err
	}
	cur, err := upload(j.cur, len(j.cur))
	if err != nil {
		return nil, err
	}
	var look cudadrv.DevicePtr
	if j.mode == 1 {
		if look, err = upload(j.look, len(j.look)); err != nil {
			return nil, err
		}
	}
	scales, err := upload(j.scales, j.batch)
	if err != nil {
		return nil, err
	}
	if j.scales == nil {
		if j.scales, err = b.deviceScales(fns, j, cur, look, scales, upload); err != nil {
			return nil, err
		}
	}
	err = b.k.launch(fns[2], j.n/4+4, cur, look, scales, b.dev[1], int64(j.batch), int64(j.n), j.a, j.b, j.divisor, j.mode)
	return j.scales, err
}

// deviceScales runs the norms and scales kernels and returns the scales,
// or a *NonFiniteExampleError.
func (b *cudaBackend) deviceScales(fns []*cudadrv.Function, j privJob, cur, look, scales cudadrv.DevicePtr,
	upload func([]float32, int) (cudadrv.DevicePtr, error)) ([]float32, error) {
	nchunks := reduce.ReduceChunks(j.n)
	partials, err := upload(nil, j.batch*nchunks)
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

// launch runs f over a grid-stride loop of threads threads (blocks of
// cudaBlock, a multiple of the warp) and waits for it; no threads: no
// launch.
func (k *cudaKernels) launch(f *cudadrv.Function, threads int, args ...any) error {
	if threads <= 0 {
		return nil
	}
	grid := cudadrv.GridFor(threads, cudaBlock, k.sms)
	if err := f.Launch([3]uint32{uint32(grid)}, [3]uint32{cudaBlock}, 0, args...); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if err := k.ctx.Synchronize(); err != nil {
		return fmt.Errorf("runtime: %s privatize: %w", k.name, err)
	}
	return nil
}
