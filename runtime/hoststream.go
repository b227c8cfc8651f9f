package runtime

import (
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// HostStream is the limit a CPU step is measured against: STREAM's copy and
// triad in float32, compiled by LLVM like the host kernel (the shared
// object of llvmgen.StreamModule, which the caller builds), loaded in the
// variant the step runs (hostkernel: CPUID, FIBERGEN_HOST_ISA), called
// through the same host ABI over the same split of threads as a step, on
// buffers staggered as the optimizer's are. Its vector stores are
// non-temporal where the CPU has them, as a tuned STREAM's.
type HostStream struct {
	copy, triad *hostkernel.Kernel
	bufs        [3][]float32 // a = b (copy), a = b + s·c (triad)
	nCopy       int          // floats per buffer of the copy, which moves as many bytes as the step
	nTriad      int          // of the triad, likewise
	threads     int
}

// NewHostStream loads the STREAM kernels from the shared object so for a
// step that moves bytes on threads threads (StepThreads: the goroutines
// the step runs on), each kernel split into that many equal parts. It fills the buffers, so that
// no page is the shared zero page, and runs each kernel once untimed.
func NewHostStream(so string, bytes int64, threads int) (*HostStream, error) {
	s := &HostStream{nCopy: int(bytes / 8), nTriad: int(bytes / 12), threads: threads}
	var err error
	if s.copy, err = hostkernel.Open(so, ir.StreamCopySymbol, 2, 1); err != nil {
		return nil, err
	}
	if s.triad, err = hostkernel.Open(so, ir.StreamTriadSymbol, 3, 1); err != nil {
		s.copy.Close()
		return nil, err
	}
	for k := range s.bufs {
		s.bufs[k] = newBuffer[float32](k, s.nCopy)
	}
	s.run(s.nCopy, func(lo, hi int) error {
		for k := range s.bufs {
			for i := lo; i < hi; i++ {
				s.bufs[k][i] = float32(i%1000) * 0.001
			}
		}
		return nil
	})
	s.Copy()
	s.Triad()
	return s, nil
}

// Copy runs the copy once: bufs[0] = bufs[1] over nCopy floats.
func (s *HostStream) Copy() error {
	return s.run(s.nCopy, func(lo, hi int) error {
		return s.copy.Run(s.bufs[:2], []float32{0}, hostkernel.Range{Lo: int64(lo), Hi: int64(hi)})
	})
}

// Triad runs the triad once: bufs[0] = bufs[1] + 3·bufs[2] over nTriad floats.
func (s *HostStream) Triad() error {
	return s.run(s.nTriad, func(lo, hi int) error {
		return s.triad.Run(s.bufs[:], []float32{3}, hostkernel.Range{Lo: int64(lo), Hi: int64(hi)})
	})
}

// CopyBytes and TriadBytes are the bytes one copy and one triad read and
// write: 2 and 3 floats per index.
func (s *HostStream) CopyBytes() int64  { return 8 * int64(s.nCopy) }
func (s *HostStream) TriadBytes() int64 { return 12 * int64(s.nTriad) }

// Kernels are the symbols that run, e.g. fibergen_stream_copy_avx512.
func (s *HostStream) Kernels() (copy, triad string) { return s.copy.Name, s.triad.Name }

// Threads is the number of threads each kernel runs on.
func (s *HostStream) Threads() int { return max(s.threads, 1) }

// Close unloads the kernels.
func (s *HostStream) Close() {
	s.copy.Close()
	s.triad.Close()
}

// run runs f over [0, n) in Threads parts, each a whole number of cache
// lines but the last, at once (parallelChunks; where n/Threads is itself a
// whole number of lines, the fewer than Threads floats left over are one
// part more).
func (s *HostStream) run(n int, f func(lo, hi int) error) error {
	return parallelChunks(n, max((n/s.Threads()+15)&^15, 16), f)
}
