package runtime

// HostCopy is the baseline a CPU step is measured against: a copy that
// moves the same number of bytes (half read, half written), split into
// contiguous parts over goroutines as the CPU backend splits a step.
type HostCopy struct {
	src, dst []byte
	per      int // bytes per part (parallelChunks), a whole number of cache lines
}

// NewHostCopy prepares a copy that moves bytes over threads goroutines. It
// fills the source, so that no page of it is the shared zero page, and runs
// one untimed copy, so that the destination is touched.
func NewHostCopy(bytes int64, threads int) *HostCopy {
	half := int((bytes/2 + 63) &^ 63)
	// Staggered as the optimizer's buffers are (newBuffer), so that the
	// baseline is not slowed where a step is not.
	c := &HostCopy{src: newBuffer[byte](0, half), dst: newBuffer[byte](1, half)}
	c.per = max((half/max(threads, 1)+63)&^63, 64)
	c.each(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c.src[i] = byte(i*7 + 1)
		}
	})
	c.Run()
	return c
}

// Run copies once.
func (c *HostCopy) Run() { c.each(func(lo, hi int) { copy(c.dst[lo:hi], c.src[lo:hi]) }) }

// Moved is the number of bytes one copy reads and writes.
func (c *HostCopy) Moved() int64 { return 2 * int64(len(c.src)) }

// Threads is the number of goroutines a copy runs on: its chunks.
func (c *HostCopy) Threads() int { return (len(c.src) + c.per - 1) / c.per }

func (c *HostCopy) each(f func(lo, hi int)) {
	parallelChunks(len(c.src), c.per, func(lo, hi int) error { f(lo, hi); return nil })
}
