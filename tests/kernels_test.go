package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// kernelSizes are the buffer lengths of the bit-exactness tests: empty,
// shorter than a group, around the vector width and block sizes, and large.
var kernelSizes = []int{0, 1, 2, 3, 4, 5, 7, 8, 1023, 1024, 1025, 65537, largeSize + 3}

// kernelSteps is the number of steps of every kernel run below largeSize
// coordinates; from largeSize on the host runs largeSteps, one of each
// noise variance of kernelSigmaW2 (the steps differ only in their scalars,
// which the smaller sizes cover over kernelSteps).
const (
	kernelSteps = 50
	largeSize   = 1 << 20
	largeSteps  = 5
)

// goRef calls a generated package's NewHost, Scalars and Step through
// reflection, so that one test drives every optimizer.
type goRef struct {
	host      reflect.Value // *Host
	step      reflect.Value // Step
	noiseType reflect.Type  // Noise
}

func newGoRef(p goPackage, sets []setting) (*goRef, error) {
	h := reflect.New(reflect.TypeOf(p.defaults).Out(0))
	h.Elem().Set(reflect.ValueOf(p.defaults).Call(nil)[0])
	for _, s := range sets {
		if err := h.MethodByName("Set").Call([]reflect.Value{reflect.ValueOf(s.name), reflect.ValueOf(s.value)})[0]; !err.IsNil() {
			return nil, err.Interface().(error)
		}
	}
	out := reflect.ValueOf(p.newHost).Call([]reflect.Value{h.Elem()})
	if !out[1].IsNil() {
		return nil, out[1].Interface().(error)
	}
	step := reflect.ValueOf(p.step)
	return &goRef{host: out[0], step: step, noiseType: step.Type().In(1)}, nil
}

// scalars returns the host scalars of step t as the kernels take them: the
// fields of Scalars in order (the step's scalars, then SigmaW).
func (r *goRef) scalars(t int, sigmaW2 float64) (reflect.Value, []float32) {
	s := r.host.MethodByName("Scalars").Call([]reflect.Value{reflect.ValueOf(t), reflect.ValueOf(sigmaW2)})[0]
	out := make([]float32, s.NumField())
	for i := range out {
		out[i] = float32(s.Field(i).Float())
	}
	return s, out
}

// run calls Step on bufs with the noise of rg.
func (r *goRef) run(s reflect.Value, rg hostkernel.Range, bufs [][]float32) {
	nz := reflect.New(r.noiseType).Elem()
	nz.FieldByName("On").SetBool(rg.Noise != 0)
	nz.FieldByName("Secure").SetBool(rg.Noise == uint32(rng.Secure))
	nz.FieldByName("Key").Set(reflect.ValueOf(rg.Key))
	nz.FieldByName("Seed").SetUint(rg.Seed)
	nz.FieldByName("Step").SetUint(uint64(rg.Step))
	nz.FieldByName("Offset").SetUint(uint64(rg.Offset))
	args := []reflect.Value{s, nz}
	for _, b := range bufs {
		args = append(args, reflect.ValueOf(b))
	}
	r.step.Call(args)
}

// hostSharedObject returns the host kernel of opt's checked-in module,
// built once per machine: it lives in the kernel cache that fibergen run
// uses too (pipeline.CachedSharedObject, named by a hash of the module,
// LLVM's version and the machine), so a test run builds only the modules
// that changed.
func hostSharedObject(t testing.TB, opt *optimizer) string {
	t.Helper()
	ll, err := os.ReadFile(repoPath("generated", opt.name, opt.name+".ll"))
	if err != nil {
		t.Fatal(err)
	}
	so, err := pipeline.CachedSharedObject(opt.name, string(ll), generatedManifest(t, opt.name).Kernels.HostFunction)
	if err != nil {
		t.Fatal(err)
	}
	return so
}

// hostKernel builds (hostSharedObject) and loads the host kernel of the
// checked-in module of opt: the best variant this CPU runs.
func hostKernel(t *testing.T, opt *optimizer) *hostkernel.Kernel {
	return loadHostKernel(t, opt, "")
}

// hostISAs are the variants of the host functions this CPU runs, the best
// first (hostkernel.ISAs).
func hostISAs(t *testing.T) []string {
	t.Helper()
	isas, err := hostkernel.ISAs()
	if err != nil {
		t.Fatal(err)
	}
	return isas
}

// hostISASizes is the largest n the tests run on a variant other than the
// best: the others differ only in the width of their main loops.
const hostISASizes = 1 << 16

// loadHostKernel builds (hostSharedObject) the host kernel of the
// checked-in module of opt and loads its variant isa ("" for the best).
func loadHostKernel(t *testing.T, opt *optimizer, isa string) *hostkernel.Kernel {
	t.Helper()
	so := hostSharedObject(t, opt)
	ref, err := newGoRef(opt.pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, scalars := ref.scalars(0, 0)
	k, err := hostkernel.OpenISA(so, generatedManifest(t, opt.name).Kernels.HostFunction, isa, 2+len(opt.states), len(scalars))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// kernelSigmaW2 is the noise variance σ_w² of step: of order 1, where a
// one-bit error in the noise path survives the rounding of g + σ_w·z, and
// small or zero, where the correction of the second moment is small.
func kernelSigmaW2(step int) float64 { return [...]float64{1, 1e-4, 0, 2.25, 2e-4}[step%5] }

// kernelCase is one bit-exactness run: n coordinates starting skew floats
// into their allocation (so 128-bit alignment differs) at global index
// offset, with or without noise. A raw case starts from zero buffers and
// steps on g = 0 with σ_w = 2^-120, below the secure scheme's grid
// (rng.SnapUnit): the states and θ then carry every bit of the draws
// (dp_sgd's θ is -lr·σ_w·z), which the other secure cases see only where a
// draw crosses a grid boundary.
type kernelCase struct {
	n, skew int
	offset  int64
	noise   rng.Mode
	raw     bool
}

func (c kernelCase) String() string {
	s := fmt.Sprintf("n=%d/skew=%d/offset=%d/noise=%v", c.n, c.skew, c.offset, c.noise)
	if c.raw {
		s += "/raw"
	}
	return s
}

// sigmaW2 is the case's noise variance at step.
func (c kernelCase) sigmaW2(step int) float64 {
	if c.raw {
		return 0x1p-240
	}
	return kernelSigmaW2(step)
}

// gradient writes the case's gradient of step into g.
func (c kernelCase) gradient(r *rand.Rand, g []float32, step int) {
	if c.raw {
		clear(g)
		return
	}
	fillGradient(r, g, step)
}

// rangeAt is the case's range at step step: its noise under a seed and a
// key of its own.
func (c kernelCase) rangeAt(step int) hostkernel.Range {
	seed := 0x5eed ^ uint64(c.n)
	return hostkernel.Range{Hi: int64(c.n), Offset: c.offset, Seed: seed, Step: uint32(step), Noise: uint32(c.noise),
		Key: [4]uint64{seed, ^seed, uint64(c.offset), 0x9e3779b97f4a7c15}}
}

func kernelCases() []kernelCase {
	var cases []kernelCase
	for _, n := range kernelSizes {
		for _, noise := range []rng.Mode{rng.Off, rng.Philox, rng.Secure} {
			cases = append(cases, kernelCase{n: n, noise: noise})
			if n < largeSize {
				cases = append(cases, kernelCase{n: n, skew: 1, offset: 3, noise: noise},
					kernelCase{n: n, skew: 3, offset: 1<<33 + 2, noise: noise})
			}
		}
	}
	// The global index crosses 2^32 halfway: the carry into the
	// counter's high word.
	return append(cases, kernelCase{n: largeSize + 3, skew: 2, offset: 1<<32 - largeSize/2, noise: rng.Philox},
		kernelCase{n: largeSize + 3, skew: 2, offset: 1<<35 - largeSize/2, noise: rng.Secure},
		kernelCase{n: 1029, skew: 1, offset: 1<<35 + 3, noise: rng.Secure, raw: true},
		kernelCase{n: 4099, offset: 5, noise: rng.Secure, raw: true})
}

// TestHostKernelMatchesGo checks that the host kernel of every shipped
// optimizer, built by llc from the checked-in .ll, computes the bits of the
// generated Go reference: every buffer after every step, noise on and off,
// awkward sizes, misaligned buffers and global offsets.
// Every variant this CPU runs is checked: the best one (the one
// hostkernel.Open picks) on every size, the others (generic, avx2) on the
// sizes up to hostISASizes.
func TestHostKernelMatchesGo(t *testing.T) {
	for _, opt := range optimizers {
		t.Run(opt.name, func(t *testing.T) {
			if opt.narrow(t) {
				t.Skip("16-bit states: TestStorageShipped runs its host kernel on typed memory")
			}
			for i, isa := range hostISAs(t) {
				k := loadHostKernel(t, opt, isa)
				for _, c := range kernelCases() {
					if (i > 0 || testing.Short()) && c.n > hostISASizes {
						continue
					}
					t.Run(k.Name+"/"+c.String(), func(t *testing.T) { checkHostKernel(t, opt, k, c) })
				}
			}
		})
	}
}

// checkHostKernel runs kernelSteps (largeSteps) steps of case c through the
// Go reference and the host kernel from the same inputs and compares them
// after each.
func checkHostKernel(t *testing.T, opt *optimizer, k *hostkernel.Kernel, c kernelCase) {
	ref := caseRef(t, opt, c)
	want, got := kernelBuffers(t, opt, c)
	r := rand.New(rand.NewPCG(uint64(c.n), uint64(c.offset)))
	steps := kernelSteps
	if c.n >= largeSize {
		steps = largeSteps
	}
	for step := range steps {
		c.gradient(r, want[1], step)
		copy(got[1], want[1])
		sigmaW2 := c.sigmaW2(step)
		s, scalars := ref.scalars(step, sigmaW2)
		rg := c.rangeAt(step)
		ref.run(s, rg, want)
		if err := k.Run(got, scalars, rg); err != nil {
			t.Fatal(err)
		}
		if msg := compareBuffers(opt, want, got); msg != "" {
			t.Fatalf("step %d: %s", step, msg)
		}
	}
}

// caseRef is the Go reference of case c: at the default hypers, or, for a
// case with skewed buffers, at distinctHypers — at the defaults some
// scalars coincide (FiBeR's ω and β1 are both 0.9), and a kernel that
// confused them would pass.
func caseRef(t testing.TB, opt *optimizer, c kernelCase) *goRef {
	t.Helper()
	var sets []setting
	if c.skew > 0 {
		sets = distinctHypers(t, opt)
	}
	ref, err := newGoRef(opt.pkg, sets)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// distinctHypers moves each hyper of opt off its default — a positive
// one down by 1.3 % per place in the declaration order, a zero one to
// 0.011 and 1 % more per place — keeping each move that leaves the hypers
// valid.
func distinctHypers(t testing.TB, opt *optimizer) []setting {
	t.Helper()
	fn, err := generatedManifest(t, opt.name).Func()
	if err != nil {
		t.Fatal(err)
	}
	var sets []setting
	for i, v := range fn.DefaultHypers() {
		s := setting{fn.HyperNames()[i], v * (1 - 0.013*float64(i+1))}
		if v == 0 {
			s.value = 0.011 * (1 + 0.01*float64(i))
		}
		if _, err := newGoRef(opt.pkg, append(sets, s)); err == nil {
			sets = append(sets, s)
		}
	}
	for i, a := range sets {
		for _, b := range sets[:i] {
			if a.value == b.value {
				t.Fatalf("%s: hypers %s and %s both %v: change distinctHypers", opt.name, a.name, b.name, a.value)
			}
		}
	}
	return sets
}

// kernelBuffers returns two identical sets of buffers (theta, g, states)
// of n floats, each starting skew floats into its allocation: N(0, 1), and
// |N(0, 1)| for a state under a square root (opt.sqrtStates) — a second
// moment is never negative, and the square root of a negative one would
// make the outputs NaN, where any NaN would match any NaN.
func kernelBuffers(t testing.TB, opt *optimizer, c kernelCase) (a, b [][]float32) {
	r := rand.New(rand.NewPCG(7, uint64(c.n)))
	nonNeg := opt.sqrtStates(t)
	for k := range ir.FirstState + len(opt.states) {
		x := make([]float32, c.n+c.skew)[c.skew:]
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if k >= ir.FirstState && nonNeg[k-ir.FirstState] {
				x[i] = float32(math.Abs(float64(x[i])))
			}
		}
		if c.raw {
			clear(x)
		}
		a = append(a, x)
		b = append(b, append(make([]float32, c.skew), x...)[c.skew:])
	}
	return a, b
}

// fillGradient writes step's gradient: mostly Gaussian at varied scales,
// with zeros, signed zeros and subnormals among them.
func fillGradient(r *rand.Rand, g []float32, step int) {
	scales := [5]float64{1e-3, 1e-2, 1e-1, 1, 10}
	drift := math.Sin(float64(step) / 7)
	for i := range g {
		switch i % 11 {
		case 3:
			g[i] = float32(math.Copysign(0, -1))
		case 7:
			g[i] = float32(1e-41 * r.NormFloat64())
		default:
			g[i] = float32(scales[i%5] * (r.NormFloat64() + drift))
		}
	}
}

// compareBuffers returns "" if want and got are the same (floatbits.Equal)
// and want holds few NaNs (floatbits.TooManyNaNs), else where they first
// differ and by how many ULPs at most, or how many NaNs want holds.
func compareBuffers(opt *optimizer, want, got [][]float32) string {
	names := append([]string{"theta", "g"}, opt.states...)
	for b := range want {
		if d := floatbits.Diff(want[b], got[b]); d != "" {
			return fmt.Sprintf("buffer %s differs: kernel%s", names[b], d)
		}
		if err := floatbits.TooManyNaNs(want[b], 0); err != nil {
			return fmt.Sprintf("buffer %s: %v", names[b], err)
		}
	}
	return ""
}

// TestHostKernelShards checks that stepping a buffer in ranges [lo, hi) —
// the way the runtime splits it over threads — or as shards with their own
// global offsets gives the bits of one call over the whole buffer.
func TestHostKernelShards(t *testing.T) {
	opt := optimizerNamed("fiber")
	k := hostKernel(t, opt)
	ref, err := newGoRef(opt.pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4099
	whole, _ := kernelBuffers(t, opt, kernelCase{n: n})
	ranges, _ := kernelBuffers(t, opt, kernelCase{n: n})
	shards, _ := kernelBuffers(t, opt, kernelCase{n: n})
	cuts := []int64{0, 1, 6, 7, 1000, 2049, 4096, n}
	for step := range 5 {
		_, scalars := ref.scalars(step, 1e-3)
		rg := hostkernel.Range{Hi: n, Seed: 99, Step: uint32(step), Noise: 1}
		if err := k.Run(whole, scalars, rg); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(cuts); i++ {
			lo, hi := cuts[i-1], cuts[i]
			r := rg
			r.Lo, r.Hi = lo, hi
			if err := k.Run(ranges, scalars, r); err != nil {
				t.Fatal(err)
			}
			var shard [][]float32
			for _, b := range shards {
				shard = append(shard, b[lo:hi])
			}
			r.Lo, r.Hi, r.Offset = 0, hi-lo, lo
			if err := k.Run(shard, scalars, r); err != nil {
				t.Fatal(err)
			}
		}
		for name, got := range map[string][][]float32{"ranges": ranges, "shards": shards} {
			if msg := compareBuffers(opt, whole, got); msg != "" {
				t.Fatalf("step %d, %s: %s", step, name, msg)
			}
		}
	}
	if slices.Equal(whole[0], ranges[0]) && whole[0][0] == 0 {
		t.Fatal("theta never moved")
	}
}
