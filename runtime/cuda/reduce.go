package cuda

import (
	"fmt"

	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// Reduce runs the reduction pass's kernel over each tensor of m, one warp
// per chunk, into the backend's device scratch, and copies every tensor's
// partials back at once.
func (b *Backend) Reduce(m backend.Memory, r backend.Reduce, partials []float32) error {
	if len(partials) != r.Len() {
		return fmt.Errorf("runtime: %s: %d partials for %d", r.Kernel, len(partials), r.Len())
	}
	b.kept.Passing()
	bufs, size := b.buffers(m)
	fn, err := b.k.mod.Function(r.Kernel)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	out, err := b.scratch.grow(b.k.ctx, 4*len(partials))
	if err != nil {
		return fmt.Errorf("runtime: %s: %w", r.Kernel, err)
	}
	var kept cudadrv.DevicePtr // null: not kept
	if r.Keep {
		if kept, err = b.kept.Buf.grow(b.k.ctx, 4*size); err != nil {
			return fmt.Errorf("runtime: %s: %w", r.Kernel, err)
		}
	}
	nz, at := r.Noise, 0
	for _, t := range r.Tensors {
		n := t.Hi - t.Lo
		if n == 0 { // no chunk to launch for, no partial, nothing to keep
			continue
		}
		var args []any
		for _, p := range b.offsetPtrs(bufs, t.Lo) {
			args = append(args, p)
		}
		for _, s := range t.Scalars {
			args = append(args, s)
		}
		keptAt := kept
		if r.Keep {
			keptAt = kept.Add(4 * t.Lo)
		}
		args = append(args, int64(n), r.Offset+int64(t.Lo), nz.Seed, nz.Step, uint32(nz.Mode), nz.Key[0], nz.Key[1], nz.Key[2], nz.Key[3], out.Add(4*at), keptAt)
		if err := b.k.launch(fn, 32*reduce.ReduceChunks(n), args...); err != nil {
			return err
		}
		at += r.Terms * reduce.ReduceChunks(n)
	}
	if len(partials) > 0 {
		if err := b.k.ctx.CopyDtoH(partials, out); err != nil {
			return fmt.Errorf("runtime: %s: %w", r.Kernel, err)
		}
	}
	b.kept.Passed(r.Keep)
	return nil
}
