package runtime

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cuda"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// The backends are reached through one interface, backend.Backend: the
// CPU and Go backends (cpuBackend, this file) and the CUDA backend
// (package runtime/cuda, which runs PTXSim too on the simulated driver
// Options.Driver gives). newBackend is the one place that knows which
// type a Backend name starts; everything else calls the interface.

func (o *Optimizer) newBackend() (backend.Backend, error) {
	if o.opts.Backend.onDevice() {
		return o.newDeviceBackend()
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

// newDeviceBackend starts the CUDA backend on the optimizer's PTX: on
// libcuda, or on the driver Options.Driver injects (PTXSim's simulated
// device).
func (o *Optimizer) newDeviceBackend() (backend.Backend, error) {
	km := o.m.Kernels
	if km.StepKernel == "" || km.PTX == "" && o.files.ptx == nil {
		return nil, fmt.Errorf("runtime: the manifest of %s names no PTX file or step kernel", o.Name())
	}
	if nb := ir.FirstState + o.prog.NumStates(); len(o.m.Buffers) != nb {
		return nil, fmt.Errorf("runtime: the manifest of %s lists %d buffers, its IR has %d (theta, g and %d states)",
			o.Name(), len(o.m.Buffers), nb, nb-ir.FirstState)
	}
	if ns := o.prog.NumKernelScalars(); len(o.m.Scalars) != ns {
		return nil, fmt.Errorf("runtime: the manifest of %s lists %d scalars, its IR has %d (host scalars and sigma_w)",
			o.Name(), len(o.m.Scalars), ns)
	}
	if o.opts.Backend == PTXSim && o.opts.Driver == nil {
		return nil, fmt.Errorf("runtime: Backend %s runs on a simulated device, whose driver Options.Driver gives (internal/cudasim.New): the runtime does not link the simulator", PTXSim)
	}
	ptx, path, err := o.files.readPTX(o.Name())
	if err != nil {
		return nil, err
	}
	// N is the own buffers' length: none for ranges (ownBufferLen), whose
	// values are the trainer's device memory.
	return cuda.Open(cuda.Config{Name: string(o.opts.Backend), Manifest: o.m, PTX: ptx, Source: path,
		Device: o.opts.Device, Driver: o.opts.Driver, Host: o.bufs, N: o.bufs[ir.ThetaBuffer].Len(), Storages: o.storages})
}

// HostKernel is the symbol of the host step function that the CPU backend
// runs, which names its instruction-set variant (e.g. "fiber_cpu_avx512",
// hostkernel.Open); "" on the other backends and before the first step.
func (o *Optimizer) HostKernel() string {
	defer o.lock()()
	if o.back == nil {
		return ""
	}
	return o.back.Kernel()
}

// ISAChoice is the instruction-set variant of the host kernel chosen for
// this CPU and why each variant was chosen or not (hostisa.Choice).
type ISAChoice = hostisa.Choice

// HostISA is the variant the CPU backend runs and why (hostkernel.Choice):
// the same for every optimizer of the process, known before the first
// step; nil where no host kernel runs (the other backends, the go
// fallback) or where FIBERGEN_HOST_ISA is wrong, which loading the
// kernel reports.
func (o *Optimizer) HostISA() *ISAChoice {
	if o.opts.Backend.onDevice() || o.opts.Backend == Go || o.files.so == "" {
		return nil
	}
	c, err := hostkernel.Choice()
	if err != nil {
		return nil
	}
	return &c
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
// global element, so the split does not change a bit. It has no device:
// a Memory with Device set is an error.
type cpuBackend struct {
	bufs    []backend.Host
	threads int
	kernel  *hostkernel.Kernel // nil: the reference
	goStep  StepFunc           // the reference from a compiled-in package; nil: the interpreter
	prog    *interp.Program
	// The privatize host functions (privatize.go), loaded from so at the
	// first Privatize; nil: the Go reference.
	so       string
	privSyms []string
	priv     *hostkernel.Privatize
	// diags are the diagnostics' host functions, loaded from so at their
	// first use, by symbol.
	diags map[string]*hostkernel.Diagnostic
	// reduce is the reduction pass's host function, loaded from so at its
	// first use (reduce.go).
	reduce *hostkernel.Reduce
	// kept is the gradient the last reduction pass kept.
	kept backend.KeptGradient[[]float32]
	// partials are the norm partials of the last Privatize, reused by the
	// next (Norms sets every one it reads): a step allocates none.
	partials []float32
	// lanes are the lane accumulators of the last PrivatizeSegmentsTo,
	// reused likewise (SegmentNorms zeroes those it uses).
	lanes []float32
}

var _ backend.Backend = (*cpuBackend)(nil)

func (b *cpuBackend) Name() string {
	if b.kernel == nil {
		return string(Go)
	}
	return string(CPU)
}

func (b *cpuBackend) Kernel() string {
	if b.kernel == nil {
		return ""
	}
	return b.kernel.Name
}

// host refuses device memory: the CPU backend steps its own.
func (b *cpuBackend) host(m backend.Memory) error {
	if !m.Own() {
		return fmt.Errorf("runtime: the %s backend has no device memory", b.Name())
	}
	return nil
}

// The least coordinates a step's piece is given: waking a thread for less
// costs more than it saves. hostPiece is the host kernel's (about 1 ns a
// coordinate: at 10k parameters a second thread made a step through the C
// ABI 0.1 ms slower, and a split paid only from about 2^16 coordinates a
// piece), goPiece the reference's, some ten times slower a coordinate.
const (
	hostPiece = 1 << 16
	goPiece   = 4096
)

// splitSteps splits [0, n) into at most threads ranges, of at least least
// coordinates, that start at multiples of 4, so that no Philox group is
// drawn twice: the ranges the CPU and Go backends step in parallel.
func splitSteps(n, threads, least int) [][2]int {
	per := (n/max(threads, 1) + 3) &^ 3
	per = max(per, least)
	var out [][2]int
	for lo := 0; lo < n; lo += per {
		out = append(out, [2]int{lo, min(lo+per, n)})
	}
	return out
}

// StepThreads is the number of goroutines the CPU backend steps n
// coordinates on with Options.Threads threads, with the host kernel
// (hostKernel) or the reference: fewer at a small n.
func StepThreads(n, threads int, hostKernel bool) int {
	return max(len(splitSteps(n, threads, pieceOf(hostKernel))), 1)
}

// pieceOf is the least piece of the host kernel or of the reference.
func pieceOf(hostKernel bool) int {
	if hostKernel {
		return hostPiece
	}
	return goPiece
}

// Step steps every segment, each split as splitSteps splits the buffers,
// on at most b.threads goroutines at once.
func (b *cpuBackend) Step(m backend.Memory, s backend.Step) error {
	if err := b.host(m); err != nil {
		return err
	}
	bufs, err := b.stepBuffers(s)
	if err != nil {
		return err
	}
	var work []func() error
	for _, seg := range s.Segments {
		for _, c := range segmentChunks(seg.Lo, seg.Hi, b.threads, pieceOf(b.kernel != nil)) {
			work = append(work, func() error { return b.stepRange(bufs, s, seg, c[0], c[1]) })
		}
	}
	return runLimited(work, max(b.threads, 1))
}

// stepBuffers are the buffers step s reads: the own ones, the gradient
// the last Reduce kept (s.Kept) in place of g.
func (b *cpuBackend) stepBuffers(s backend.Step) ([]backend.Host, error) {
	if kept, err := b.kept.Take(s); err != nil || !kept {
		return b.bufs, err
	}
	bufs := slices.Clone(b.bufs)
	bufs[ir.GradBuffer] = backend.Float32s(b.kept.Buf)
	return bufs, nil
}

// segmentChunks splits [lo, hi) as splitSteps splits its length, with the
// cuts inside moved up to multiples of 8, so that no block of draws — a
// Philox group of four, a secure octet of eight — is drawn by two chunks.
func segmentChunks(lo, hi, threads, least int) [][2]int {
	cs := splitSteps(hi-lo, threads, least)
	for i := range cs {
		for j := range cs[i] {
			if x := lo + cs[i][j]; x < hi && x > lo {
				cs[i][j] = min((x+7)&^7, hi)
			} else {
				cs[i][j] = x
			}
		}
	}
	return slices.DeleteFunc(cs, func(c [2]int) bool { return c[0] >= c[1] })
}

// stepRange steps [lo, hi) of segment seg of step s on bufs.
func (b *cpuBackend) stepRange(bufs []backend.Host, s backend.Step, seg segment, lo, hi int) error {
	nz := s.Noise
	if b.kernel != nil {
		rg := hostkernel.Range{Lo: int64(lo), Hi: int64(hi), Offset: s.Offset, Seed: nz.Seed, Step: nz.Step, Noise: uint32(nz.Mode), Key: nz.Key}
		return b.kernel.RunHost(bufs, seg.Scalars, rg)
	}
	vals := widenRange(bufs, lo, hi) // the Go code steps float32 values
	defer storeWidened(bufs, vals, lo, hi)
	if b.goStep != nil {
		b.goStep(vals, seg.Scalars, 0, hi-lo, uint64(s.Offset)+uint64(lo), uint32(nz.Mode), nz.Seed, nz.Key, nz.Step)
		return nil
	}
	seg.Host = seg.Host.Piece(lo - seg.Lo) // the line values at the piece's rows and columns
	return b.stepReference(vals, nz, uint64(s.Offset)+uint64(lo), seg)
}

// widenRange is the values [lo, hi) of bufs as float32s: the buffers'
// own memory for the float32 ones, widened copies of the 16-bit ones.
func widenRange(bufs []backend.Host, lo, hi int) [][]float32 {
	out := make([][]float32, len(bufs))
	for i, buf := range bufs {
		out[i] = buf.Slice(lo, hi).Widen()
	}
	return out
}

// storeWidened stores back into the 16-bit buffers of bufs, at [lo, hi),
// the values of vals (widenRange's, stepped: each a value of its type).
func storeWidened(bufs []backend.Host, vals [][]float32, lo, hi int) {
	for i, buf := range bufs {
		if buf.Narrow() { // a float32 buffer's values are its own memory, stepped in place
			buf.Slice(lo, hi).SetRounded(0, vals[i]) // each a value of its type: exact
		}
	}
}

// stepReference runs the interpreter on bufs, drawing the noise nz of
// their coordinates' global indexes (coordinate 0's is offset): into g
// first, or, for a noise block, in the step.
func (b *cpuBackend) stepReference(bufs [][]float32, nz rng.Stream, offset uint64, s segment) error {
	g := bufs[ir.GradBuffer]
	sigma := s.Scalars[ir.SigmaWScalar(len(s.Scalars))]
	in := &interp.Noise{Stream: nz, SigmaW: sigma, Offset: offset}
	if nz.Mode != rng.Off && b.prog.Func.Noise == nil {
		g = make([]float32, len(g))
		nz.Privatize(g, bufs[ir.GradBuffer], sigma, offset)
	}
	return b.prog.Step(s.Host, in, bufs[ir.ThetaBuffer], g, bufs[ir.FirstState:])
}

// runLimited runs the functions, at most limit at once, and returns their
// errors joined. min(limit, len(work)) workers, the caller's goroutine one
// of them, take the functions in turn: a step of a model of many small
// tensors (a segment each) starts a goroutine or two, not one a tensor,
// whose wake-ups had cost more than the tensors' work (25 µs each called
// from Python, where the step of 400 tensors of 64 took 27 ms).
func runLimited(work []func() error, limit int) error {
	errs := make([]error, len(work))
	var next atomic.Int64
	run := func() {
		for i := int(next.Add(1)) - 1; i < len(work); i = int(next.Add(1)) - 1 {
			errs[i] = work[i]()
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait() // before a panic of the caller's items goes up: no worker outlives the call
	for range min(limit, len(work)) - 1 {
		wg.Go(run)
	}
	run()
	wg.Wait()
	return errors.Join(errs...)
}

// FirstNonFinite is firstNonFinite over the gradient buffer split across
// b's threads.
func (b *cpuBackend) FirstNonFinite(m backend.Memory) (int, float32, error) {
	if err := b.host(m); err != nil {
		return 0, 0, err
	}
	g := b.bufs[ir.GradBuffer].F32
	var mu sync.Mutex
	first := -1
	b.split(len(g), 1<<16, func(lo, hi int) error {
		if i := firstNonFinite(g[lo:hi]); i >= 0 {
			mu.Lock()
			if first < 0 || lo+i < first {
				first = lo + i
			}
			mu.Unlock()
		}
		return nil
	})
	if first < 0 {
		return -1, 0, nil
	}
	return first, g[first], nil
}

func (b *cpuBackend) Fill(m backend.Memory, buf int, v float32) error {
	if err := b.host(m); err != nil {
		return err
	}
	if buf < 0 || buf >= len(b.bufs) {
		return fmt.Errorf("runtime: no buffer %d (of %d)", buf, len(b.bufs))
	}
	b.bufs[buf].Fill(v)
	return nil
}

func (b *cpuBackend) Read(buf, off, n int) ([]float32, error) { return b.bufs[buf].Values(off, n) }

func (b *cpuBackend) Write(buf, off int, src []float32) error { return b.bufs[buf].SetValues(off, src) }

// Sync has nothing to do: the backend steps the host buffers themselves.
func (b *cpuBackend) Sync() error { return nil }

// Rebind steps host instead of the buffers it was started on.
func (b *cpuBackend) Rebind(host []backend.Host) error {
	b.bufs = host
	return nil
}

func (b *cpuBackend) Close() error {
	var errs []error
	for sym, d := range b.diags {
		errs = append(errs, d.Close())
		delete(b.diags, sym)
	}
	if b.priv != nil {
		b.priv.Close()
		b.priv = nil
	}
	if b.reduce != nil {
		errs = append(errs, b.reduce.Close())
		b.reduce = nil
	}
	if b.kernel != nil {
		errs = append(errs, b.kernel.Close())
		b.kernel = nil
	}
	return errors.Join(errs...)
}
