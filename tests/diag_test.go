package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/generated/abtrack"
	"github.com/fibergen/fibergen/generated/disk_corr"
	"github.com/fibergen/fibergen/generated/doppler"
	"github.com/fibergen/fibergen/generated/dp_adambc"
	"github.com/fibergen/fibergen/generated/fiber"
	"github.com/fibergen/fibergen/generated/fiber_bccorr"
	"github.com/fibergen/fibergen/generated/fiber_bf16"
	"github.com/fibergen/fibergen/generated/fiber_cosine"
	"github.com/fibergen/fibergen/generated/fiber_ft"
	"github.com/fibergen/fibergen/generated/fiber_nfloor"
	"github.com/fibergen/fibergen/generated/fiber_nocorr"
	"github.com/fibergen/fibergen/generated/fiber_rfloor"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// diagSizes are the lengths of the clamp_mass tests: empty, shorter than a
// row of a chunk, around one chunk of 4096, and many chunks with a tail.
var diagSizes = []int{0, 1, 5, 4095, 4096, 4097, 65537}

// clampMassFuncs are the generated ClampMass functions of the shipped
// optimizers that declare `diagnostic clamp_mass(mhat, vbar)`.
var clampMassFuncs = map[string]any{
	"fiber": fiber.ClampMass, "disk_corr": disk_corr.ClampMass, "abtrack": abtrack.ClampMass,
	"dp_adambc": dp_adambc.ClampMass, "fiber_bccorr": fiber_bccorr.ClampMass, "fiber_ft": fiber_ft.ClampMass,
	"doppler": doppler.ClampMass, "fiber_nocorr": fiber_nocorr.ClampMass, "fiber_cosine": fiber_cosine.ClampMass,
	"fiber_nfloor": fiber_nfloor.ClampMass, "fiber_rfloor": fiber_rfloor.ClampMass, "fiber_bf16": fiber_bf16.ClampMass,
}

// TestClampMassDeclared checks that every shipped optimizer with a floored
// second moment declares clamp_mass and its manifest names the entry points,
// and that every optimizer whose manifest declares a diagnostic has its
// generated function here, so that the diagnostic tests cover them all.
func TestClampMassDeclared(t *testing.T) {
	for name := range clampMassFuncs {
		m := generatedManifest(t, name)
		if len(m.Kernels.Diagnostics) != 1 || m.Kernels.Diagnostics[0].Kind != "clamp_mass" {
			t.Errorf("%s: manifest diagnostics %+v, want clamp_mass", name, m.Kernels.Diagnostics)
		}
	}
	for _, opt := range optimizers {
		if m := generatedManifest(t, opt.name); len(m.Kernels.Diagnostics) > 0 && clampMassFuncs[opt.name] == nil {
			t.Errorf("%s declares diagnostics %+v, which clampMassFuncs lacks", opt.name, m.Kernels.Diagnostics)
		}
	}
}

// diagNames are the optimizers that declare clamp_mass, in the order of
// optimizers.
func diagNames() []string {
	var names []string
	for _, opt := range optimizers {
		if clampMassFuncs[opt.name] != nil {
			names = append(names, opt.name)
		}
	}
	return names
}

// diagTarget is one optimizer's clamp_mass on every target.
type diagTarget struct {
	name    string
	man     *manifest.Manifest
	ref     *interp.Diagnostic
	goFunc  reflect.Value // the generated ClampMass
	goRef   *goRef
	hosts   []*hostkernel.Diagnostic // the host function <name>_clamp_mass_cpu and its AVX2 twin where the CPU runs it
	nbuf    int
	reads   []int // buffer index of each state the diagnostic reads
	scalars reflect.Value
	kernelS []float32 // the step's kernel scalars
}

func newDiagTarget(t *testing.T, name string, t0 int, sigmaW2 float64) *diagTarget {
	t.Helper()
	opt := optimizerNamed(name)
	m := generatedManifest(t, name)
	fn, err := m.Func()
	if err != nil {
		t.Fatal(err)
	}
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := p.Diagnostic("clamp_mass")
	if err != nil {
		t.Fatal(err)
	}
	r, err := newGoRef(opt.pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &diagTarget{name: name, man: m, ref: ref, goFunc: reflect.ValueOf(clampMassFuncs[name]), goRef: r, nbuf: len(m.Buffers)}
	d.scalars, d.kernelS = r.scalars(t0, sigmaW2)
	for _, s := range m.Kernels.Diagnostics[0].Reads {
		d.reads = append(d.reads, slices.IndexFunc(m.Buffers, func(b manifest.Buffer) bool { return b.Name == s }))
	}
	return d
}

// diagHostFuncs builds (hostSharedObject, with the step's host kernel)
// the shared object of opt and loads the diagnostic's host function in
// every variant this CPU runs.
func diagHostFuncs(t *testing.T, opt *optimizer, m *manifest.Manifest) []*hostkernel.Diagnostic {
	t.Helper()
	so := hostSharedObject(t, opt)
	var out []*hostkernel.Diagnostic
	for _, isa := range hostISAs(t) {
		d, err := hostkernel.OpenDiagnosticISA(so, m.Kernels.Diagnostics[0].HostFunction, isa, len(m.Buffers), len(m.Scalars))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		out = append(out, d)
	}
	return out
}

// goPartials runs the generated ClampMass.
func (d *diagTarget) goPartials(bufs [][]float32, num, den []float32) {
	args := []reflect.Value{d.scalars}
	for _, i := range d.reads {
		args = append(args, reflect.ValueOf(bufs[i]))
	}
	d.goFunc.Call(append(args, reflect.ValueOf(num), reflect.ValueOf(den)))
}

// interpPartials runs the interpreter.
func (d *diagTarget) interpPartials(t *testing.T, bufs [][]float32, num, den []float32) {
	t.Helper()
	if err := d.ref.Partials(d.kernelS, bufs[2:], num, den); err != nil {
		t.Fatal(err)
	}
}

// hostPartials runs the host function h on the chunks [lo, hi).
func (d *diagTarget) hostPartials(t *testing.T, h *hostkernel.Diagnostic, bufs [][]float32, lo, hi int, num, den []float32) {
	t.Helper()
	if err := h.Run(bufs, d.kernelS, len(bufs[0]), lo, hi, num, den); err != nil {
		t.Fatal(err)
	}
}

// diagBuffers returns every buffer of n coordinates with random values: the
// second moments spread over eight decades around the floor, so that some
// coordinates are clamped and some are not. Buffers hold at least one
// value, so that an empty run still has pointers.
func diagBuffers(r *rand.Rand, nbuf, n int) [][]float32 {
	bufs := make([][]float32, nbuf)
	for i := range bufs {
		bufs[i] = make([]float32, max(n, 1))[:n]
		for j := range bufs[i] {
			x := float32(r.NormFloat64())
			if r.IntN(2) == 0 {
				x = float32(math.Abs(float64(x)) * math.Pow(10, -12+8*r.Float64()))
			}
			bufs[i][j] = x
		}
	}
	return bufs
}

// TestClampMassTargets checks the generated Go code, the interpreter and
// the host function against each other bit for bit, with the host's chunks
// split over threads in several ways.
func TestClampMassTargets(t *testing.T) {
	for _, name := range diagNames() {
		t.Run(name, func(t *testing.T) {
			if optimizerNamed(name).narrow(t) {
				t.Skip("16-bit states: TestStorageShipped runs its clamp_mass on typed memory")
			}
			d := newDiagTarget(t, name, 3, 1e-8)
			d.hosts = diagHostFuncs(t, optimizerNamed(name), d.man)
			r := rand.New(rand.NewPCG(7, uint64(len(name))))
			for _, n := range diagSizes {
				d.checkSize(t, r, n)
			}
		})
	}
}

func (d *diagTarget) checkSize(t *testing.T, r *rand.Rand, n int) {
	bufs := diagBuffers(r, d.nbuf, n)
	c := reduce.ReduceChunks(n)
	want := [2][]float32{make([]float32, c), make([]float32, c)}
	d.goPartials(bufs, want[0], want[1])
	got := [2][]float32{make([]float32, c), make([]float32, c)}
	d.interpPartials(t, bufs, got[0], got[1])
	compareBits(t, d.name, n, "interp", want, got)
	for _, h := range d.hosts {
		for _, split := range [][]int{{0, c}, {0, c / 3, c / 2, c}, {0, 1, c}} {
			got := [2][]float32{make([]float32, max(c, 1))[:c], make([]float32, max(c, 1))[:c]}
			for i := 0; i+1 < len(split); i++ {
				d.hostPartials(t, h, bufs, min(split[i], c), min(split[i+1], c), got[0], got[1])
			}
			compareBits(t, d.name, n, "host", want, got)
		}
	}
	if v := fiber.Ratio(want[0], want[1]); n >= 4096 && !(v > 0 && v < 1) {
		t.Errorf("%s n=%d: clamp_mass %v: the random states should clamp some coordinates and not others", d.name, n, v)
	}
}

func compareBits(t *testing.T, name string, n int, target string, want, got [2][]float32) {
	t.Helper()
	if err := diffPartials(want, got); err != nil {
		t.Fatalf("%s n=%d: %s: %v", name, n, target, err)
	}
}

// diffPartials returns how the partial sums got first differ from want's
// (floatbits.Diff), or an error if want's hold NaNs (the states are
// finite).
func diffPartials(want, got [2][]float32) error {
	for s := range want {
		if d := floatbits.Diff(want[s], got[s]); d != "" {
			return fmt.Errorf("partials of sum %d differ from the Go reference's: %s", s, d)
		}
		if err := floatbits.TooManyNaNs(want[s], 0); err != nil {
			return fmt.Errorf("partials of sum %d: %v", s, err)
		}
	}
	return nil
}

// fiberClampMass64 is the paper's formula (Appendix E) for FiBeR at step t,
// written from the paper in float64: mhat = m/(1-β1^(t+1)),
// vbar = max(v/(1-β2^(t+1)) - A(ω)σ², ε_v), A = (2-ω)/(4-3ω),
// Σ 1[vbar = ε_v]·|mhat| / Σ |mhat|.
func fiberClampMass64(h fiber.Hypers, t int, sigmaW2 float64, m, v []float32) float64 {
	a := (2 - h.Omega) / (4 - 3*h.Omega)
	var num, den float64
	for i := range m {
		mhat := float64(m[i]) / (1 - math.Pow(h.Beta1, float64(t+1)))
		vbar := math.Max(float64(v[i])/(1-math.Pow(h.Beta2, float64(t+1)))-a*sigmaW2, h.EpsV)
		if vbar == h.EpsV {
			num += math.Abs(mhat)
		}
		den += math.Abs(mhat)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// TestClampMassFormula checks fiber's clamp_mass against the float64
// formula on states whose clamping decision has a wide margin (vhat - Aσ²
// below ε_v/2 or above 2ε_v), so that float32 and float64 agree on every
// indicator. The sums differ by rounding alone: each partial adds at most
// 128 terms per lane and 5 tree levels in float32, a relative error below
// 140·2^-24 < 1e-5 for num and den alike, so the ratio is within 2e-5.
func TestClampMassFormula(t *testing.T) {
	const step, sigmaW2 = 4, 1e-6
	h := fiber.Defaults()
	d := newDiagTarget(t, "fiber", step, sigmaW2)
	r := rand.New(rand.NewPCG(3, 4))
	bc2 := 1 - math.Pow(h.Beta2, step+1)
	floorV := (h.EpsV + (2-h.Omega)/(4-3*h.Omega)*sigmaW2) * bc2 // v on the floor's edge
	for _, n := range diagSizes[1:] {
		bufs := diagBuffers(r, d.nbuf, n)
		m, v := bufs[d.reads[0]], bufs[d.reads[1]]
		for i := range v {
			v[i] = float32(floorV * []float64{0.5 * r.Float64(), 2 + 10*r.Float64()}[r.IntN(2)])
		}
		got := d.ratio(bufs)
		want := fiberClampMass64(h, step, sigmaW2, m, v)
		if math.Abs(got-want) > 2e-5*want || n > 100 && (want < 0.2 || want > 0.8) {
			t.Errorf("n=%d: clamp_mass %v, the float64 formula %v", n, got, want)
		}
	}
}

// ratio is clamp_mass of the Go reference's partials.
func (d *diagTarget) ratio(bufs [][]float32) float64 {
	c := reduce.ReduceChunks(len(bufs[0]))
	num, den := make([]float32, c), make([]float32, c)
	d.goPartials(bufs, num, den)
	return fiber.Ratio(num, den)
}

// TestClampMassExtremes checks the ends of the scale: with a huge floor
// every coordinate is clamped and clamp_mass is exactly 1; with a zero floor
// and no noise (no correction) a positive second moment is never clamped
// and clamp_mass is exactly 0; with every first moment zero it is 0.
func TestClampMassExtremes(t *testing.T) {
	const n = 5000
	for _, c := range []struct {
		epsV, sigmaW2 float64
		zeroM         bool
		want          float64
	}{{1e30, 1e-8, false, 1}, {0, 0, false, 0}, {1e-8, 1e-8, true, 0}} {
		h := fiber.Defaults()
		h.EpsV = c.epsV
		host, err := fiber.NewHost(h)
		if err != nil {
			t.Fatal(err)
		}
		s := host.Scalars(2, c.sigmaW2)
		r := rand.New(rand.NewPCG(1, 2))
		m, v := make([]float32, n), make([]float32, n)
		for i := range m {
			v[i] = float32(math.Abs(r.NormFloat64()) + 1e-3)
			if !c.zeroM {
				m[i] = float32(r.NormFloat64())
			}
		}
		num, den := make([]float32, reduce.ReduceChunks(n)), make([]float32, reduce.ReduceChunks(n))
		fiber.ClampMass(s, m, v, num, den)
		if got := fiber.Ratio(num, den); got != c.want {
			t.Errorf("eps_v=%v sigma_w2=%v zero m=%v: clamp_mass %v, want %v", c.epsV, c.sigmaW2, c.zeroM, got, c.want)
		}
	}
}
