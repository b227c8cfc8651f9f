package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/cudadrv"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// The bfloat16 states of testdata/storage.dsl, stepped by the Go reference
// (package interp, whose buffers hold the widened values), the host kernel
// (every variant this CPU runs) and the PTX on the simulator, which hold
// them as 16-bit values: every buffer after every step, bit for bit, in
// every noise mode, at awkward sizes, offsets and misalignments, whole and
// split in two (the rounding bits are a function of the global index).

// storageCase is one run: n coordinates from global index offset, the
// buffers skew values into their allocations, split the first launch's end
// (0: one launch).
type storageCase struct {
	n, skew, split int
	offset         int64
	noise          rng.Mode
}

func (c storageCase) String() string {
	return fmt.Sprintf("n=%d/skew=%d/split=%d/offset=%d/%s", c.n, c.skew, c.split, c.offset, c.noise)
}

func storageCases() []storageCase {
	var cases []storageCase
	for _, noise := range []rng.Mode{rng.Off, rng.Philox, rng.Secure} {
		cases = append(cases, storageCase{n: 1, noise: noise}, storageCase{n: 7, skew: 1, offset: 3, noise: noise},
			storageCase{n: 1029, noise: noise}, storageCase{n: 1029, skew: 3, offset: 1<<33 + 2, split: 517, noise: noise})
	}
	return cases
}

// storageRun is the buffers of one run: the Go reference's, float32 each,
// and the kernels', whose narrow ones are bfloat16 memory seen as floats
// (half of each float's allocation unused), skew values into it.
type storageRun struct {
	fn   *ir.Func
	ref  [][]float32
	bufs [][]float32
	raw  [][]uint16 // the bfloat16 memory of the narrow buffers; nil for the others
}

// newStorageRun returns run buffers for c, random, the states at their
// initial values where init says so; a bfloat16 state's values are
// bfloat16s.
func newStorageRun(t *testing.T, fn *ir.Func, p *interp.Program, c storageCase, init bool) *storageRun {
	r := &storageRun{fn: fn}
	rnd := rand.New(rand.NewPCG(uint64(c.n), 7))
	for range ir.Buffers(fn) {
		ref := make([]float32, c.n)
		for j := range ref {
			ref[j] = float32(rnd.NormFloat64())
		}
		r.ref = append(r.ref, ref)
	}
	if init {
		if err := p.Init(fn.DefaultHypers(), r.ref[ir.FirstState:]); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range ir.Buffers(fn) {
		if !b.Storage.Narrow() {
			buf := append(make([]float32, c.skew), r.ref[i]...)[c.skew:]
			r.bufs, r.raw = append(r.bufs, buf), append(r.raw, nil)
			continue
		}
		raw := make([]uint16, 2*(c.n+c.skew)+2)[c.skew:]
		for j, x := range r.ref[i] {
			raw[j] = rng.Bits(b.Storage.DType, x) // Init's values are stored values already
			r.ref[i][j] = rng.Widen(b.Storage.DType, raw[j])
		}
		r.bufs = append(r.bufs, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), c.n))
		r.raw = append(r.raw, raw)
	}
	return r
}

// stepRef steps the reference, g privatized as the kernels privatize it.
func (r *storageRun) stepRef(t *testing.T, p *interp.Program, s interp.Scalars, nz rng.Stream, sigma float32, offset int64) {
	g := make([]float32, len(r.ref[ir.GradBuffer]))
	nz.Privatize(g, r.ref[ir.GradBuffer], sigma, uint64(offset))
	in := &interp.Noise{Stream: nz, SigmaW: sigma, Offset: uint64(offset)}
	if err := p.Step(s, in, r.ref[ir.ThetaBuffer], g, r.ref[ir.FirstState:]); err != nil {
		t.Fatal(err)
	}
}

// diff returns the first value the kernels' buffers and the reference's
// do not agree on: bit for bit, but for a float32 NaN the GPU's arithmetic
// made (floatbits.Same; a narrow buffer stores one NaN).
func (r *storageRun) diff(step int) error {
	for i, ref := range r.ref {
		for j, want := range ref {
			got := r.bufs[i][j]
			if r.raw[i] != nil {
				got = rng.Widen(ir.Buffers(r.fn)[i].Storage.DType, r.raw[i][j])
			}
			if !floatbits.Same(got, want) {
				return fmt.Errorf("step %d: %s[%d] = %#08x, the reference %#08x", step, ir.Buffers(r.fn)[i].Name, j, math.Float32bits(got), math.Float32bits(want))
			}
		}
	}
	return nil
}

// storageSteps runs three steps of case c, launch running the kernels on
// the coordinates [lo, hi) of run r's buffers with range rg.
func storageSteps(t *testing.T, fn *ir.Func, c storageCase, launch launch) {
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	r := newStorageRun(t, fn, p, c, true)
	key := rng.Key{11, 12, 13, 14}
	for step := range 3 {
		sigmaW2 := kernelSigmaW2(step)
		s := p.HostScalars(fn.DefaultHypers(), step, sigmaW2)
		nz := rng.Stream{Mode: c.noise, Seed: 99, Key: key, Step: uint32(step)}
		scalars := p.KernelScalars(s, sigmaW2)
		r.stepRef(t, p, s, nz, scalars[len(scalars)-1], c.offset)
		rg := hostkernel.Range{Lo: 0, Hi: int64(c.n), Offset: c.offset, Seed: nz.Seed, Step: nz.Step, Noise: uint32(c.noise), Key: key}
		if c.split > 0 {
			first := rg
			first.Hi, rg.Lo = int64(c.split), int64(c.split)
			launch(r, scalars, first)
		}
		launch(r, scalars, rg)
		if err := r.diff(step); err != nil {
			t.Fatal(err)
		}
	}
}

// launch runs a step kernel on the coordinates rg of a run's buffers.
type launch func(r *storageRun, scalars []float32, rg hostkernel.Range)

// hostLaunch is the host kernel k.
func hostLaunch(t *testing.T, k *hostkernel.Kernel) launch {
	return func(r *storageRun, scalars []float32, rg hostkernel.Range) {
		if err := k.Run(r.bufs, scalars, rg); err != nil {
			t.Fatal(err)
		}
	}
}

// ptxLaunch is the PTX kernel k on a device copy of the run's buffers,
// skew floats into their allocations, launched from rg.Lo (the kernel
// steps [0, n) of the pointers it is given).
func ptxLaunch(t *testing.T, k *gpuKernel, skew int) launch {
	return func(r *storageRun, scalars []float32, rg hostkernel.Range) {
		dev := deviceBuffers(t, k.ctx, r.bufs, skew)
		part := make([]cudadrv.DevicePtr, len(dev))
		for i, b := range ir.Buffers(r.fn) {
			part[i] = dev[i].Add(int(rg.Lo) * b.Storage.DType.Size())
		}
		n := int(rg.Hi - rg.Lo)
		rg.Offset += rg.Lo
		if err := k.launch(t, part, scalars, n, rg, [2]int{64, 0}); err != nil {
			t.Fatal(err)
		}
		readBuffers(t, k.ctx, dev, r.bufs)
	}
}

// unitLaunches are the step kernels of u by target: the host kernel's
// variants this CPU runs and the PTX on the simulated device of run.
func unitLaunches(t *testing.T, u *pipeline.Unit, run ptxRun, skew int) map[string]launch {
	so, err := u.CachedSharedObject()
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := u.PTX()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]launch{"ptxsim": ptxLaunch(t, &gpuKernel{ctx: run.ctx, fn: loadFunctions(t, run.ctx, ptx, u.Func.Name+"_step")[0]}, skew)}
	for _, isa := range hostISAs(t) {
		k, err := hostkernel.OpenISA(so, u.Module.Kernels.HostFunction, isa, len(ir.Buffers(u.Func)), len(u.Module.Scalars))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		out[isa] = hostLaunch(t, k)
	}
	return out
}

// paramStorages are the parameter storages testdata/storage.dsl is
// compiled for: float32, and bfloat16 rounded stochastically (theta then
// shares its rounding word with g, which is never stored).
var paramStorages = []ir.Storage{{DType: lang.Float32}, {DType: lang.BFloat16, Stochastic: true}}

// TestStorageKernels steps testdata/storage.dsl, for float32 and bfloat16
// parameters, on every target against the Go reference.
func TestStorageKernels(t *testing.T) {
	run, _ := simRun(t, cudasim.Config{})
	for _, params := range paramStorages {
		u := mustCompileFileFor(t, repoPath("runtime", "testdata", "storage.dsl"), params)
		for _, c := range storageCases() {
			for name, launch := range unitLaunches(t, u, run, c.skew) {
				t.Run(fmt.Sprintf("%s/%s/params=%v", name, c, params), func(t *testing.T) { storageSteps(t, u.Func, c, launch) })
			}
		}
	}
}

// TestStorageGeneratedGo checks that the generated Go package of
// testdata/storage.dsl, for float32 and bfloat16 parameters, narrows its
// stores as the Go reference does: three noisy steps, every value of theta
// and of every state, bit for bit.
func TestStorageGeneratedGo(t *testing.T) {
	for _, params := range paramStorages {
		t.Run(fmt.Sprintf("params=%v", params), func(t *testing.T) { checkStorageGeneratedGo(t, params) })
	}
}

func checkStorageGeneratedGo(t *testing.T, params ir.Storage) {
	const n, seed, sigmaW2 = 37, 5, 0.01
	u := mustCompileFileFor(t, repoPath("runtime", "testdata", "storage.dsl"), params)
	dir := t.TempDir()
	writeModule(t, dir)
	writePackage(t, dir, u)
	writeFile(t, filepath.Join(dir, "probe", "main.go"), fmt.Sprintf(`package main

import (
	"fmt"
	"math"

	"fibergenprobe/storage"
)

func main() {
	theta, g := make([]float32, %[1]d), make([]float32, %[1]d)
	for i := range theta {
		theta[i], g[i] = float32(math.Sin(float64(i))), float32(math.Cos(float64(3*i)))
	}
	o, err := storage.New(storage.Defaults(), len(theta))
	if err != nil {
		panic(err)
	}
	o.Seed = %[2]d
	for range 3 {
		if err := o.Update(theta, g, %[3]v); err != nil {
			panic(err)
		}
	}
	for _, buf := range [][]float32{theta, o.M, o.V, o.S, o.C, o.H, o.Q} {
		for _, x := range buf {
			fmt.Printf("%%08x ", math.Float32bits(x))
		}
		fmt.Println()
	}
}
`, n, seed, sigmaW2))
	got := goTool(t, dir, "run", "./probe")

	p, err := interp.New(u.Func)
	if err != nil {
		t.Fatal(err)
	}
	theta, g := make([]float32, n), make([]float32, n)
	for i := range theta {
		theta[i], g[i] = float32(math.Sin(float64(i))), float32(math.Cos(float64(3*i)))
	}
	states := make([][]float32, len(u.Func.States))
	for i := range states {
		states[i] = make([]float32, n)
	}
	e := interp.Engine{P: p, Hypers: u.Func.DefaultHypers(), Noise: true, Seed: seed}
	if err := e.Init(states); err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		if err := e.Step(step, sigmaW2, theta, g, states); err != nil {
			t.Fatal(err)
		}
	}
	var want strings.Builder
	for _, buf := range append([][]float32{theta}, states...) {
		for _, x := range buf {
			fmt.Fprintf(&want, "%08x ", math.Float32bits(x))
		}
		want.WriteString("\n")
	}
	if got != want.String() {
		t.Errorf("the generated package computed\n%s\nthe Go reference\n%s", got, want.String())
	}
}

// BenchmarkStorageStep times dp_adamw's host kernel over 16M coordinates
// with float32 states and with bfloat16 states (to nearest, stochastic),
// without noise and with Philox's, split over GOMAXPROCS threads as the
// runtime splits a step. It reports the bytes a coordinate moves and the
// time per step as a ratio to float32's in the same noise mode, measured in
// the same run (docs/benchmarks.md).
func BenchmarkStorageStep(b *testing.B) {
	const n = 1 << 24
	src, err := os.ReadFile(repoPath("optimizers", "dp_adamw.dsl"))
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct{ name, storage string }{{"f32", ""}, {"bf16", ": bf16"}, {"bf16_stochastic", ": bf16 stochastic"}}
	f32ns := map[rng.Mode]float64{}
	for _, v := range variants {
		text := strings.NewReplacer("state m = 0", "state m"+v.storage+" = 0", "state v = 0", "state v"+v.storage+" = 0").Replace(string(src))
		u := mustCompile(b, "dp_adamw.dsl", []byte(text))
		so, err := u.CachedSharedObject()
		if err != nil {
			b.Fatal(err)
		}
		k, err := hostkernel.Open(so, u.Module.Kernels.HostFunction, len(ir.Buffers(u.Func)), len(u.Module.Scalars))
		if err != nil {
			b.Fatal(err)
		}
		bytes := 0
		for _, buf := range ir.Buffers(u.Func) {
			bytes += buf.Storage.DType.Size() * (btoi(!buf.WriteOnly) + btoi(!buf.ReadOnly))
		}
		bufs := make([][]float32, len(ir.Buffers(u.Func)))
		for i := range bufs {
			bufs[i] = make([]float32, n) // a bfloat16 buffer uses the first half
		}
		scalars := make([]float32, len(u.Module.Scalars))
		scalars[0] = 1
		for _, noise := range []rng.Mode{rng.Off, rng.Philox} {
			b.Run(v.name+"/"+noise.String(), func(b *testing.B) {
				b.SetBytes(int64(bytes) * n)
				step := func() {
					threads := goruntime.GOMAXPROCS(0)
					var wg sync.WaitGroup
					for t := range threads {
						wg.Go(func() {
							rg := hostkernel.Range{Lo: int64(t * n / threads), Hi: int64((t + 1) * n / threads), Seed: 1, Noise: uint32(noise)}
							if err := k.Run(bufs, scalars, rg); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
				step() // the pages touched, by the threads that step them
				for b.Loop() {
					step()
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if v.storage == "" {
					f32ns[noise] = ns
				}
				b.ReportMetric(float64(bytes), "B/coord")
				b.ReportMetric(ns/1e6, "ms/step")
				b.ReportMetric(ns/f32ns[noise], "of-f32-time")
			})
		}
		k.Close()
	}
}

func btoi(x bool) int {
	if x {
		return 1
	}
	return 0
}

// passSizes are the sizes the passes besides the step are checked at: one
// coordinate, one chunk and one more, and three chunks and a partial row.
var passSizes = []int{1, 5, 4097, 3*4096 + 129}

// TestStorageDiagnostic checks clamp_mass over bfloat16 states
// (testdata/storage_passes.dsl): the host function of every variant this CPU
// runs against the Go reference, bit for bit.
func TestStorageDiagnostic(t *testing.T) {
	u, _ := compileStorage(t, "storage_passes.dsl")
	so, err := u.CachedSharedObject()
	if err != nil {
		t.Fatal(err)
	}
	var hosts []*hostkernel.Diagnostic
	for _, isa := range hostISAs(t) {
		h, err := hostkernel.OpenDiagnosticISA(so, u.Module.Kernels.Diagnostics[0].HostFunction, isa, len(ir.Buffers(u.Func)), len(u.Module.Scalars))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		hosts = append(hosts, h)
	}
	checkClampMass(t, u.Func, hosts)
}

// TestStorageReduce checks the reduction pass over bfloat16 states
// (testdata/storage_passes.dsl: a norm and a max of bf16 states) with
// Philox noise: the host function (the variant this CPU runs best) against
// the Go reference, partials and kept gradient bit for bit.
func TestStorageReduce(t *testing.T) {
	u, p := compileStorage(t, "storage_passes.dsl")
	const step, sigmaW2, seed, offset = 2, 0.25, 3, 1<<33 + 1
	scalars := p.ReduceScalars(u.Func.DefaultHypers(), step, sigmaW2)
	so, err := u.CachedSharedObject()
	if err != nil {
		t.Fatal(err)
	}
	terms := u.Func.NumReductions()
	e, err := hostkernel.OpenReduce(so, u.Module.Kernels.Reduce.HostFunction, len(ir.Buffers(u.Func)), len(scalars), terms)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, n := range passSizes {
		r := newStorageRun(t, u.Func, p, storageCase{n: n, skew: n % 3}, false)
		c := reduce.ReduceChunks(n)
		want, kept := make([][]float32, terms), make([]float32, n)
		for i := range want {
			want[i] = make([]float32, c)
		}
		nz := &interp.Noise{Stream: rng.Stream{Mode: rng.Philox, Seed: seed, Step: step}, SigmaW: scalars[len(scalars)-1], Offset: offset}
		if err := p.ReducePartials(scalars, nz, r.ref, want, kept); err != nil {
			t.Fatal(err)
		}
		got, gotKept := make([]float32, terms*c), make([]float32, n)
		rg := hostkernel.Range{Lo: 0, Hi: int64(c), Offset: offset, Seed: seed, Step: step, Noise: uint32(rng.Philox)}
		if err := e.Run(r.bufs, scalars, n, rg, got, gotKept); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			compareBits(t, e.Name, n, fmt.Sprintf("term %d", i), [2][]float32{want[i], kept}, [2][]float32{got[i*c : (i+1)*c], gotKept})
		}
	}
}

// compileStorage compiles testdata/name and its Go reference.
func compileStorage(t *testing.T, name string) (*pipeline.Unit, *interp.Program) {
	u := mustCompileFile(t, repoPath("runtime", "testdata", name))
	p, err := interp.New(u.Func)
	if err != nil {
		t.Fatal(err)
	}
	return u, p
}

// TestStoragePassesPTXSim checks clamp_mass and the reduction pass over
// bfloat16 states on the PTX simulator against the Go reference, bit for
// bit (the reduction with Philox noise, keeping the privatized gradient).
func TestStoragePassesPTXSim(t *testing.T) {
	u, p := compileStorage(t, "storage_passes.dsl")
	ptx, err := u.PTX()
	if err != nil {
		t.Fatal(err)
	}
	run, _ := simRun(t, cudasim.Config{})
	fns := loadFunctions(t, run.ctx, ptx, u.Module.Kernels.Diagnostics[0].Kernel, u.Module.Kernels.Reduce.Kernel)
	diag, err := p.Diagnostic("clamp_mass")
	if err != nil {
		t.Fatal(err)
	}
	const step, sigmaW2, seed, offset = 2, 0.25, 3, 1<<33 + 1
	h := u.Func.DefaultHypers()
	diagScalars, redScalars := p.KernelScalars(p.HostScalars(h, step, sigmaW2), sigmaW2), p.ReduceScalars(h, step, sigmaW2)
	terms := u.Func.NumReductions()
	for _, n := range passSizes {
		r := newStorageRun(t, u.Func, p, storageCase{n: n, skew: n % 3}, false)
		c := reduce.ReduceChunks(n)
		dev := deviceBuffers(t, run.ctx, r.bufs, n%3)
		var args []any
		for _, d := range dev {
			args = append(args, d)
		}
		// clamp_mass: num and den.
		want := [2][]float32{make([]float32, c), make([]float32, c)}
		if err := diag.Partials(diagScalars, r.ref[ir.FirstState:], want[0], want[1]); err != nil {
			t.Fatal(err)
		}
		got := [2][]float32{make([]float32, c), make([]float32, c)}
		out := deviceBuffers(t, run.ctx, got[:], 0)
		launchPass(t, run, fns[0], c, slices.Concat(args, floatArgs(diagScalars), []any{int64(n), out[0], out[1]}))
		readBuffers(t, run.ctx, out, got[:])
		compareBits(t, "clamp_mass", n, "ptxsim", want, got)
		// The reduction pass: partials, term-major, and the kept g.
		wantRed, kept := make([][]float32, terms), make([]float32, n)
		for i := range wantRed {
			wantRed[i] = make([]float32, c)
		}
		nz := &interp.Noise{Stream: rng.Stream{Mode: rng.Philox, Seed: seed, Step: step}, SigmaW: redScalars[len(redScalars)-1], Offset: offset}
		if err := p.ReducePartials(redScalars, nz, r.ref, wantRed, kept); err != nil {
			t.Fatal(err)
		}
		host := [][]float32{make([]float32, terms*c), make([]float32, n)}
		out = deviceBuffers(t, run.ctx, host, 0)
		launchPass(t, run, fns[1], c, slices.Concat(args, floatArgs(redScalars),
			[]any{int64(n), int64(offset), uint64(seed), uint32(step), uint32(rng.Philox), uint64(0), uint64(0), uint64(0), uint64(0), out[0], out[1]}))
		readBuffers(t, run.ctx, out, host)
		for i := range wantRed {
			compareBits(t, fmt.Sprintf("term %d", i), n, "ptxsim", [2][]float32{wantRed[i], kept}, [2][]float32{host[0][i*c : (i+1)*c], host[1]})
		}
	}
}

// launchPass launches a pass kernel with one warp per chunk of its c.
func launchPass(t *testing.T, run ptxRun, fn *cudadrv.Function, c int, args []any) {
	t.Helper()
	grid, block := launchShape(t, run.ctx, fn, [2]int{64, 0}, 32*c)
	if err := fn.Launch(grid, block, 0, args...); err != nil {
		t.Fatal(err)
	}
	if err := run.ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// floatArgs are xs as kernel arguments.
func floatArgs(xs []float32) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// conversionProbe stores g into a state of every storage and rounding, so
// that the edges of the conversions meet the kernels exactly as given.
const conversionProbe = `optimizer conversions
state a: bf16 = 0
state b: bf16 stochastic = 0
state c: f16 = 0
state d: f16 stochastic = 0
step {
	a = g
	b = g
	c = g
	d = g
	theta = theta + 0 * (a + b + c + d)
}
`

// conversionEdges are the float32s at the edges of the narrowings: ties
// between bfloat16s and float16s (normal and subnormal), the largest
// finite values and the thresholds past them, float32 subnormals, zeros,
// infinities and NaNs of either sign.
func conversionEdges() []float32 {
	var out []float32
	for _, u := range []uint32{0, 0x80000000, 0x00000001, 0x807fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffffffff, 0x7f800001,
		0x3f808000, 0x3f818000, 0x3f807fff, 0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, // bfloat16 ties and overflow
		0x3f801000, 0x3f803000, 0x3f800fff, 0x477fe000, 0x477fefff, 0x477ff000, 0x47800000, 0xc77ff000, // float16 normal ties and overflow
		0x38800000, 0x387fffff, 0x387fe000, 0x387ff000, 0x33000000, 0x33000001, 0x32ffffff, 0x33c00000, 0x34200000, 0x2f800000} { // float16 subnormals
		out = append(out, math.Float32frombits(u))
	}
	for k := range 8 { // ties between float16 subnormals k and k+1
		out = append(out, float32(math.Ldexp(float64(2*k+1), -25)), -float32(math.Ldexp(float64(2*k+1), -25)))
	}
	return out
}

// TestStorageConversions steps conversionProbe over the edges, replicated
// past the host's wide loops, on the Go reference, the host kernel of
// every variant and the PTX simulator, without noise: every stored value
// bit for bit.
func TestStorageConversions(t *testing.T) {
	u := mustCompile(t, "conversions.dsl", []byte(conversionProbe))
	p, err := interp.New(u.Func)
	if err != nil {
		t.Fatal(err)
	}
	edges := conversionEdges()
	c := storageCase{n: 4 * 64 * len(edges), skew: 1, offset: 5}
	g := make([]float32, c.n)
	for i := range g {
		g[i] = edges[(i/7+i)%len(edges)] // each edge in every lane of a vector
	}
	run, _ := simRun(t, cudasim.Config{})
	launches := unitLaunches(t, u, run, 0)
	for name, launch := range launches {
		r := newStorageRun(t, u.Func, p, c, true)
		copy(r.ref[ir.GradBuffer], g)
		copy(r.bufs[ir.GradBuffer], g)
		s := p.HostScalars(u.Func.DefaultHypers(), 0, 0)
		scalars := p.KernelScalars(s, 0)
		nz := rng.Stream{Mode: rng.Off, Seed: 7, Step: 3}
		r.stepRef(t, p, s, nz, 0, c.offset)
		launch(r, scalars, hostkernel.Range{Hi: int64(c.n), Offset: c.offset, Seed: nz.Seed, Step: nz.Step})
		if err := r.diff(0); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestStorageShipped runs every shipped optimizer with a 16-bit state — on
// typed memory, which the float32 harnesses of the kernels cannot hold —
// through its checked-in host kernel (every variant this CPU runs) and
// PTX (on the simulator), step and clamp_mass, against the Go reference,
// bit for bit (storageCases; passSizes).
func TestStorageShipped(t *testing.T) {
	run, _ := simRun(t, cudasim.Config{})
	checkStorageShipped(t, run, true)
}

// TestGPUStorageShipped is TestStorageShipped's PTX on device 0 of a real
// GPU (scripts/gpu-check.sh); it skips without one.
func TestGPUStorageShipped(t *testing.T) { checkStorageShipped(t, gpuRun(t), false) }

// checkStorageShipped runs the shipped optimizers with 16-bit states on
// the device of run and, with host, on the host kernel and its clamp_mass.
func checkStorageShipped(t *testing.T, run ptxRun, host bool) {
	for _, opt := range optimizers {
		if !opt.narrow(t) {
			continue
		}
		t.Run(opt.name, func(t *testing.T) {
			fn := opt.fn(t)
			for name, launch := range shippedLaunches(t, opt, run, host) {
				for _, c := range storageCases() {
					t.Run(name+"/"+c.String(), func(t *testing.T) { storageSteps(t, fn, c, launch) })
				}
			}
			if len(fn.Diags) > 0 && host {
				checkClampMass(t, fn, diagHostFuncs(t, opt, generatedManifest(t, opt.name)))
			}
		})
	}
}

// shippedLaunches are opt's step kernels by target: the PTX on the device
// of run and, with host, the host kernel's variants.
func shippedLaunches(t *testing.T, opt *optimizer, run ptxRun, host bool) map[string]launch {
	out := map[string]launch{"ptx": ptxLaunch(t, loadGPUKernel(t, run.ctx, opt), 0)}
	for _, isa := range hostISAs(t) {
		if host {
			out[isa] = hostLaunch(t, loadHostKernel(t, opt, isa))
		}
	}
	return out
}

// checkClampMass checks clamp_mass's host functions hosts of fn, on typed
// memory, against the Go reference.
func checkClampMass(t *testing.T, fn *ir.Func, hosts []*hostkernel.Diagnostic) {
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Diagnostic("clamp_mass")
	if err != nil {
		t.Fatal(err)
	}
	scalars := p.KernelScalars(p.HostScalars(fn.DefaultHypers(), 3, 1e-8), 1e-8)
	for _, h := range hosts {
		for _, n := range passSizes {
			r := newStorageRun(t, fn, p, storageCase{n: n, skew: n % 3}, false)
			c := reduce.ReduceChunks(n)
			want, got := [2][]float32{make([]float32, c), make([]float32, c)}, [2][]float32{make([]float32, c), make([]float32, c)}
			if err := d.Partials(scalars, r.ref[ir.FirstState:], want[0], want[1]); err != nil {
				t.Fatal(err)
			}
			if err := h.Run(r.bufs, scalars, n, 0, c, got[0], got[1]); err != nil {
				t.Fatal(err)
			}
			compareBits(t, h.Name, n, "host", want, got)
		}
	}
}
