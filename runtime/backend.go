package runtime

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// backend runs steps over the optimizer's flat buffers (theta, g, states).
type backend interface {
	kind() Backend
	step(a stepArgs) error
	read(buf, off, n int) ([]float32, error)
	write(buf, off int, src []float32) error
	// sync brings the optimizer's host copies of the buffers up to date.
	sync() error
	close() error
}

func (o *Optimizer) newBackend() (backend, error) {
	switch o.opts.Backend {
	case CUDA, PTXSim:
		return newCUDABackend(o)
	}
	b := &cpuBackend{bufs: o.bufs, threads: o.opts.threads(), prog: o.prog, goStep: o.files.goStep}
	so := o.files.so
	if o.opts.Backend == Go || so == "" { // Open refused the CPU without a kernel unless GoFallback
		return b, nil
	}
	k, err := hostkernel.Open(so, o.m.Kernels.HostFunction, len(o.m.Buffers), len(o.m.Scalars))
	if err != nil {
		return nil, err
	}
	if abi, err := k.ABI(o.m.Kernels.ABISymbol); err != nil || abi != o.m.Kernels.ABI {
		k.Close()
		return nil, fmt.Errorf("runtime: %s was not built from the %s that the manifest of %s describes (ABI stamp %.12q, want %.12q): rebuild it with fibergen build", so, o.m.Kernels.LL, o.m.Optimizer, abi, o.m.Kernels.ABI)
	}
	b.kernel, b.so, b.privSyms = k, so, privatizeSymbols(o)
	return b, nil
}

// HostKernel is the symbol of the host step function that the CPU backend
// runs, which names its instruction-set variant (e.g. "fiber_cpu_avx512",
// hostkernel.Open); "" on the other backends and before the first step.
func (o *Optimizer) HostKernel() string {
	defer o.lock()()
	if b, ok := o.back.(*cpuBackend); ok && b.kernel != nil {
		return b.kernel.Name
	}
	return ""
}

func (opts Options) threads() int {
	if opts.Threads > 0 {
		return opts.Threads
	}
	return goruntime.GOMAXPROCS(0)
}

// cpuBackend steps the host buffers on every core: through the host kernel
// when it is loaded, else through the generated package's Go code or the
// interpreter. The noise is indexed by
// global element, so the split does not change a bit.
type cpuBackend struct {
	bufs    [][]float32
	threads int
	kernel  *hostkernel.Kernel // nil: the reference
	goStep  StepFunc           // the reference from a compiled-in package; nil: the interpreter
	prog    *interp.Program
	// The privatize host functions (privatize.go), loaded from so at the
	// first Privatize; nil: the Go reference.
	so       string
	privSyms []string
	priv     *hostkernel.Privatize
}

func (b *cpuBackend) kind() Backend {
	if b.kernel == nil {
		return Go
	}
	return CPU
}

// splitSteps splits [0, n) into at most threads ranges, of at least 4096
// coordinates, that start at multiples of 4, so that no Philox group is
// drawn twice: the ranges the CPU and Go backends step in parallel.
func splitSteps(n, threads int) [][2]int {
	per := (n/max(threads, 1) + 3) &^ 3
	per = max(per, 4096)
	var out [][2]int
	for lo := 0; lo < n; lo += per {
		out = append(out, [2]int{lo, min(lo+per, n)})
	}
	return out
}

// StepThreads is the number of goroutines the CPU and Go backends step n
// coordinates on with Options.Threads threads: fewer at a small n.
func StepThreads(n, threads int) int { return max(len(splitSteps(n, threads)), 1) }

// step steps every segment, each split as splitSteps splits the buffers,
// on at most b.threads goroutines at once.
func (b *cpuBackend) step(a stepArgs) error {
	var work []func() error
	for _, s := range a.segs {
		for _, c := range segmentChunks(s.lo, s.hi, b.threads) {
			work = append(work, func() error { return b.stepRange(a.rg, s, c[0], c[1]) })
		}
	}
	return runLimited(work, max(b.threads, 1))
}

// segmentChunks splits [lo, hi) as splitSteps splits its length, with the
// cuts inside moved up to multiples of 4, so that no Philox group of four
// is drawn by two chunks.
func segmentChunks(lo, hi, threads int) [][2]int {
	cs := splitSteps(hi-lo, threads)
	for i := range cs {
		for j := range cs[i] {
			if x := lo + cs[i][j]; x < hi && x > lo {
				cs[i][j] = min((x+3)&^3, hi)
			} else {
				cs[i][j] = x
			}
		}
	}
	return slices.DeleteFunc(cs, func(c [2]int) bool { return c[0] >= c[1] })
}

// stepRange steps [lo, hi) of segment s.
func (b *cpuBackend) stepRange(rg hostkernel.Range, s segment, lo, hi int) error {
	if b.kernel != nil {
		rg.Lo, rg.Hi = int64(lo), int64(hi)
		return b.kernel.Run(b.bufs, s.scalars, rg)
	}
	if b.goStep != nil {
		b.goStep(b.bufs, s.scalars, lo, hi, uint64(rg.Offset), rg.Seed, rg.Step, rg.Noise != 0)
		return nil
	}
	return b.stepReference(rg, s, lo, hi)
}

// stepReference runs the interpreter on [lo, hi), drawing the noise of
// those coordinates' global indexes.
func (b *cpuBackend) stepReference(rg hostkernel.Range, s segment, lo, hi int) error {
	g := b.bufs[1][lo:hi]
	if rg.Noise != 0 {
		g = make([]float32, hi-lo)
		rng.Privatize(g, b.bufs[1][lo:hi], s.scalars[len(s.scalars)-1], rg.Seed, rg.Step, uint64(rg.Offset)+uint64(lo))
	}
	var states [][]float32
	for _, st := range b.bufs[2:] {
		states = append(states, st[lo:hi])
	}
	return b.prog.Step(s.host, b.bufs[0][lo:hi], g, states)
}

// runLimited runs the functions, at most limit at once, and returns their
// errors joined.
func runLimited(work []func() error, limit int) error {
	errs := make([]error, len(work))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, f := range work {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *cpuBackend) read(buf, off, n int) ([]float32, error) {
	if off < 0 || n < 0 || off+n > len(b.bufs[buf]) {
		return nil, fmt.Errorf("runtime: read [%d, %d) of a buffer of %d", off, off+n, len(b.bufs[buf]))
	}
	out := make([]float32, n)
	copy(out, b.bufs[buf][off:])
	return out, nil
}

func (b *cpuBackend) write(buf, off int, src []float32) error {
	if off < 0 || off+len(src) > len(b.bufs[buf]) {
		return fmt.Errorf("runtime: write [%d, %d) of a buffer of %d", off, off+len(src), len(b.bufs[buf]))
	}
	copy(b.bufs[buf][off:], src)
	return nil
}

func (b *cpuBackend) sync() error { return nil }

func (b *cpuBackend) close() error {
	if b.priv != nil {
		b.priv.Close()
		b.priv = nil
	}
	if b.kernel == nil {
		return nil
	}
	return b.kernel.Close()
}
