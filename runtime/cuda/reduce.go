package cuda

import (
	"fmt"

	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
)

// Reduce runs the reduction pass's kernel over segment seg of m, one warp
// per chunk, and copies the partials back.
func (b *Backend) Reduce(m backend.Memory, r backend.Reduce, seg backend.Segment, partials []float32) error {
	n := seg.Hi - seg.Lo
	if n == 0 {
		return nil
	}
	chunks := reduce.ReduceChunks(n)
	if len(partials) == 0 || len(partials)%chunks != 0 {
		return fmt.Errorf("runtime: %s: %d partials for chunks of %d", r.Kernel, len(partials), chunks)
	}
	bufs, _ := b.buffers(m)
	fn, err := b.k.mod.Function(r.Kernel)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	out, err := b.k.ctx.Alloc(4 * len(partials))
	if err != nil {
		return fmt.Errorf("runtime: %s: %w", r.Kernel, err)
	}
	defer b.k.ctx.Free(out)
	var args []any
	for _, p := range offsetPtrs(bufs, seg.Lo) {
		args = append(args, p)
	}
	for _, s := range r.Scalars {
		args = append(args, s)
	}
	nz := r.Noise
	args = append(args, int64(n), r.Offset+int64(seg.Lo), nz.Seed, nz.Step, uint32(nz.Mode), nz.Key[0], nz.Key[1], nz.Key[2], nz.Key[3], out)
	if err := b.k.launch(fn, 32*chunks, args...); err != nil {
		return err
	}
	if err := b.k.ctx.CopyDtoH(partials, out); err != nil {
		return fmt.Errorf("runtime: %s: %w", r.Kernel, err)
	}
	return nil
}
