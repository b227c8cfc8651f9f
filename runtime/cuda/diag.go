package cuda

import (
	"fmt"

	"github.com/fibergen/fibergen/runtime/backend"
)

// Partials runs the diagnostic's kernel over segment seg of m, one warp
// per chunk, and copies the partials back.
func (b *Backend) Partials(m backend.Memory, d backend.Diagnostic, seg backend.Segment, num, den []float32) error {
	if len(num) == 0 {
		return nil
	}
	bufs, _ := b.buffers(m)
	fn, err := b.k.mod.Function(d.Kernel)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	out, err := b.scratch.grow(b.k.ctx, 8*len(num))
	if err != nil {
		return fmt.Errorf("runtime: %s: %w", d.Kernel, err)
	}
	var args []any
	for _, p := range b.offsetPtrs(bufs, seg.Lo) {
		args = append(args, p)
	}
	for _, s := range seg.Scalars {
		args = append(args, s)
	}
	args = append(args, int64(seg.Hi-seg.Lo), out, out.Add(4*len(num)))
	if err := b.k.launch(fn, 32*len(num), args...); err != nil {
		return err
	}
	if err := b.k.ctx.CopyDtoH(num, out); err != nil {
		return fmt.Errorf("runtime: %s: %w", d.Kernel, err)
	}
	if err := b.k.ctx.CopyDtoH(den, out.Add(4*len(num))); err != nil {
		return fmt.Errorf("runtime: %s: %w", d.Kernel, err)
	}
	return nil
}
