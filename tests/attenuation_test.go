package tests

// The attenuation of the DP noise, end to end: the steady-state variance
// A·σ² that fibergen derives for a filtered state (attenuation) and the
// finite-time variance (attenuation_t) must be what the real step does to
// pure noise. Two checks:
//
//   - Monte Carlo: g = w, w ~ N(0, σ²) i.i.d. over many coordinates; each
//     coordinate is an independent run of the filter, so the variance of a
//     state across coordinates after enough steps estimates A·σ². The test
//     accepts within 5 standard errors of the sample variance,
//     sqrt(2/(n-1))·A·σ², and checks on the same data that this rule
//     rejects a wrong A (the unfiltered 1, A·1.05, A·0.95), so that it can
//     fail. -mc.seed reruns it with other noise.
//   - Impulse response: g = 1 at step 0 and 0 afterwards; the sum of the
//     squares of the state's values is A (float32 accumulation aside).
//
// Both run the generated packages (fiber, disk, doppler) and the
// interpreter on filters written in the DSL here. DOPPLER's second-order
// filter is also checked against the variance of an ARMA(2,1) process
// (oracle.DopplerAttenuation), and fiber_ft's attenuation_t against the
// paper's Σ_t recursion (oracle.FiniteAttenuation).

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/generated/disk"
	"github.com/fibergen/fibergen/generated/doppler"
	"github.com/fibergen/fibergen/generated/fiber"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/tests/oracle"
)

var mcSeed = flag.Uint64("mc.seed", 0x5eedfeb1, "seed of the Monte Carlo attenuation tests (TestMonteCarlo*)")

// mcZ is the acceptance half-width in standard errors.
const mcZ = 5

// attenAlphaBeta is the alpha-beta tracker, with attenuation_t(l) stored in
// a state so that the test can read what the step computed.
const attenAlphaBeta = `optimizer alphabeta
hyper lr = 1e-3 in (0, inf)
hyper alpha = 0.5 in (0, 2)
hyper beta = 0.2 in (0, 4)
state l = 0
state s = 0
state al = 0
step {
	p = l + s
	res = g - p
	l = p + alpha * res
	s = s + beta * res
	al = attenuation_t(l)
	theta = theta - lr * (l + s) / (1 + attenuation(l) * sigma_w2 + attenuation(s) * sigma_w2)
}
`

// attenCascade is three EMAs in a row.
const attenCascade = `optimizer cascade
hyper lr = 1e-3 in (0, inf)
hyper kappa = 0.3 in (0, 1]
state e1 = 0
state e2 = 0
state e3 = 0
step {
	e1 = (1 - kappa) * e1 + kappa * g
	e2 = (1 - kappa) * e2 + kappa * e1
	e3 = (1 - kappa) * e3 + kappa * e2
	theta = theta - lr * e3 / (1 + attenuation(e3) * sigma_w2)
}
`

// attenABG is the alpha-beta-gamma tracker.
const attenABG = `optimizer abg
hyper lr = 1e-3 in (0, inf)
hyper alpha = 0.5 in (0, 2)
hyper beta = 0.2 in (0, 4)
hyper gamma = 0.02 in (0, 4)
state x = 0
state v = 0
state acc = 0
step {
	xp = x + v + 0.5 * acc
	vp = v + acc
	res = g - xp
	x = xp + alpha * res
	v = vp + beta * res
	acc = acc + gamma * res
	theta = theta - lr * x / (1 + attenuation(x) * sigma_w2 + attenuation(v) + attenuation(acc))
}
`

// attenShipped compiles optimizers/NAME.dsl.
func attenShipped(t testing.TB, name string) *pipeline.Unit {
	t.Helper()
	return mustCompileFile(t, repoPath("optimizers", name+".dsl"))
}

// attenModel is a state's noise model at one hyper setting, with the
// attenuation fibergen derives for it.
type attenModel struct {
	m, b   []float64 // M k×k row major, b
	target int
	a      float64 // the steady-state attenuation
}

// finite returns the finite-time gains (attenuation_t) of the model.
func (am attenModel) finite() *gain.FiniteGain { return gain.NewFiniteGain(am.m, am.b, am.target) }

// attenModelAt derives the attenuation of state s of fn at hypers h: the
// closed form of noise.Solve evaluated exactly (or SteadyGain where fibergen
// solves numerically), on the model of u.Noise; where s has a Filter,
// its FilterValues and SteadyGain must agree.
func attenModelAt(t testing.TB, u *pipeline.Unit, s string, h []float64) attenModel {
	t.Helper()
	fn := u.Func
	var model *noise.Model
	for _, sn := range u.Noise.States {
		if sn.State == s {
			if sn.Model == nil {
				t.Fatalf("%s: no noise model for %s: %s", fn.Name, s, sn.Why)
			}
			model = sn.Model
		}
	}
	if model == nil {
		t.Fatalf("%s: no state %s in the noise analysis", fn.Name, s)
	}
	x := make([]*big.Rat, len(u.Noise.Symbols))
	for i, sym := range u.Noise.Symbols {
		x[i] = new(big.Rat)
		if sym.Op == ir.OpHyper {
			x[i].SetFloat64(h[fn.HyperIndex(sym.Name)])
		}
	}
	eval := func(f interface {
		Eval([]*big.Rat) (*big.Rat, error)
	}) float64 {
		r, err := f.Eval(x)
		if err != nil {
			t.Fatalf("%s: evaluating the model of %s: %v", fn.Name, s, err)
		}
		v, _ := r.Float64()
		return v
	}
	am := attenModel{target: model.Target}
	for _, row := range model.M {
		for _, e := range row {
			am.m = append(am.m, eval(e))
		}
	}
	for _, e := range model.B {
		am.b = append(am.b, eval(e))
	}
	g, err := noise.Solve(model, u.Noise.Symbols)
	if err != nil {
		t.Fatalf("%s: Solve(%s): %v", fn.Name, s, err)
	}
	if g.Sigma != nil {
		am.a = eval(g.A)
	} else {
		am.a = gain.SteadyGain(am.m, am.b, am.target)
	}
	if !(am.a > 0) || math.IsInf(am.a, 0) {
		t.Fatalf("%s: attenuation(%s) = %v at %v", fn.Name, s, am.a, h)
	}
	if fl := fn.Filter(s); fl != nil {
		fm, fb := fn.FilterValues(fl, h)
		if sg := gain.SteadyGain(fm, fb, fl.Target); math.Abs(sg-am.a) > 1e-12*am.a {
			t.Fatalf("%s: attenuation(%s) at %v: closed form %.17g, SteadyGain(FilterValues) %.17g", fn.Name, s, h, am.a, sg)
		}
		am.m, am.b = fm, fb // what the host computes with
	}
	return am
}

// stepsToSteady returns the number of steps after which the variance of a
// run from the zero state is within rel of A: A - attenuation_t(T-1) < rel·A.
func stepsToSteady(t testing.TB, am attenModel, rel float64) int {
	t.Helper()
	fg := am.finite()
	for T := 1; T <= 20000; T++ {
		if am.a-fg.At(T-1) < rel*am.a {
			return max(T, 5)
		}
	}
	t.Fatalf("the finite-time gain does not reach A = %v in 20000 steps (M %v, b %v)", am.a, am.m, am.b)
	return 0
}

// sampleVariance is the unbiased sample variance of xs, in float64.
func sampleVariance(xs []float32) float64 {
	mean := 0.0
	for _, x := range xs {
		mean += float64(x)
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		d := float64(x) - mean
		ss += d * d
	}
	return ss / float64(len(xs)-1)
}

// varianceZ is how many standard errors the sample variance got of n
// Gaussian draws lies from the variance want: the standard error of the
// sample variance is sqrt(2/(n-1))·want.
func varianceZ(got, want float64, n int) float64 {
	return (got - want) / (math.Sqrt(2/float64(n-1)) * want)
}

// checkVariance accepts the empirical ratio got = variance/σ² of n
// coordinates against the derived gain want within mcZ standard errors, and
// checks that the same rule rejects a wrong gain: want·1.05, want·0.95
// and, where it differs from want, the unfiltered 1.
func checkVariance(t *testing.T, what string, got, want float64, n int) {
	t.Helper()
	t.Logf("%s: variance/σ² = %.6g, derived %.6g, z = %.2f (n = %d)", what, got, want, varianceZ(got, want, n), n)
	if z := varianceZ(got, want, n); math.Abs(z) > mcZ || math.IsNaN(z) {
		t.Errorf("%s: variance/σ² = %.6g, derived %.6g: %.1f standard errors off (n = %d, seed %#x)", what, got, want, z, n, *mcSeed)
		return
	}
	wrong := []float64{want * 1.05, want * 0.95}
	if math.Abs(want-1) > 0.05*want {
		wrong = append(wrong, 1)
	}
	for _, w := range wrong {
		if z := varianceZ(got, w, n); math.Abs(z) <= mcZ {
			t.Errorf("%s: the test cannot tell the derived %.6g from a wrong %.6g (variance/σ² = %.6g, z = %.2f, n = %d): too few coordinates", what, want, w, got, z, n)
		}
	}
}

// stepper runs one filter implementation over n coordinates.
type stepper interface {
	step(g []float32) error
	state(name string) []float32
}

type fiberStepper struct {
	o       *fiber.Optimizer
	theta   []float32
	sigmaW2 float64
}

func (s *fiberStepper) step(g []float32) error { return s.o.Update(s.theta, g, s.sigmaW2) }
func (s *fiberStepper) state(name string) []float32 {
	switch name {
	case "gt":
		return s.o.Gt
	case "r":
		return s.o.R
	}
	panic("fiber has no filtered state " + name)
}

func newFiberStepper(t testing.TB, omega float64, n int, sigmaW2 float64) *fiberStepper {
	t.Helper()
	h := fiber.Defaults()
	if err := h.Set("omega", omega); err != nil {
		t.Fatal(err)
	}
	o, err := fiber.New(h, n)
	if err != nil {
		t.Fatal(err)
	}
	o.Noise = false // the test adds the noise itself
	return &fiberStepper{o: o, theta: make([]float32, n), sigmaW2: sigmaW2}
}

type diskStepper struct {
	o       *disk.Optimizer
	theta   []float32
	sigmaW2 float64
}

func (s *diskStepper) step(g []float32) error { return s.o.Update(s.theta, g, s.sigmaW2) }
func (s *diskStepper) state(name string) []float32 {
	if name != "gt" {
		panic("disk has no filtered state " + name)
	}
	return s.o.Gt
}

func newDiskStepper(t testing.TB, kappa float64, n int, sigmaW2 float64) *diskStepper {
	t.Helper()
	h := disk.Defaults()
	if err := h.Set("kappa", kappa); err != nil {
		t.Fatal(err)
	}
	o, err := disk.New(h, n)
	if err != nil {
		t.Fatal(err)
	}
	o.Noise = false // the test adds the noise itself
	// The observation's weight a = (1 − κ)/(κγ) leaves [0, 1] for small κ;
	// the filter under test does not read it.
	o.AllowExtrapolation = true
	return &diskStepper{o: o, theta: make([]float32, n), sigmaW2: sigmaW2}
}

type dopplerStepper struct {
	o       *doppler.Optimizer
	theta   []float32
	sigmaW2 float64
}

func (s *dopplerStepper) step(g []float32) error { return s.o.Update(s.theta, g, s.sigmaW2) }
func (s *dopplerStepper) state(name string) []float32 {
	switch name {
	case "y":
		return s.o.Y
	case "y1":
		return s.o.Y1
	}
	panic("doppler has no filtered state " + name)
}

// dopplerSettings are filter coefficients of DOPPLER's low-pass, all of
// unit DC gain: the defaults (a double pole at 0.5 and a zero at −1),
// complex poles of modulus √0.4 and of modulus √0.7 with a negative b1, and
// two distinct real poles, 0.9 and 0.5, with a zero at −1.
var dopplerSettings = [][]string{
	nil,
	{"a1=-1.2", "a2=0.4", "b0=0.1", "b1=0.1"},
	{"a1=-1.5", "a2=0.7", "b0=0.3", "b1=-0.1"},
	{"a1=-1.4", "a2=0.45", "b0=0.025", "b1=0.025"},
}

func newDopplerStepper(t testing.TB, sets []string, n int, sigmaW2 float64) *dopplerStepper {
	t.Helper()
	h := doppler.Defaults()
	for _, kv := range sets {
		name, value, _ := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Set(name, x); err != nil {
			t.Fatal(err)
		}
	}
	o, err := doppler.New(h, n)
	if err != nil {
		t.Fatal(err)
	}
	o.Noise = false // the test adds the noise itself
	return &dopplerStepper{o: o, theta: make([]float32, n), sigmaW2: sigmaW2}
}

// dopplerARMA is the variance of y per unit noise variance from the ARMA(2,1)
// formula, at the hypers h of doppler.dsl compiled as fn.
func dopplerARMA(fn *ir.Func, h []float64) float64 {
	at := func(name string) float64 { return h[fn.HyperIndex(name)] }
	return oracle.DopplerAttenuation(at("b0"), at("b1"), at("a1"), at("a2"))
}

type interpStepper struct {
	p       *interp.Program
	h       []float64
	t       int
	sigmaW2 float64
	theta   []float32
	states  [][]float32
}

func (s *interpStepper) step(g []float32) error {
	err := s.p.Step(s.p.HostScalars(s.h, s.t, s.sigmaW2), nil, s.theta, g, s.states)
	s.t++
	return err
}

func (s *interpStepper) state(name string) []float32 {
	i := slices.Index(s.p.Func.States, name)
	if i < 0 {
		panic("no state " + name)
	}
	return s.states[i]
}

func newInterpStepper(t testing.TB, fn *ir.Func, h []float64, n int, sigmaW2 float64) *interpStepper {
	t.Helper()
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(h); err != nil {
		t.Fatal(err)
	}
	s := &interpStepper{p: p, h: h, sigmaW2: sigmaW2, theta: make([]float32, n), states: make([][]float32, p.NumStates())}
	for i := range s.states {
		s.states[i] = make([]float32, n)
	}
	if err := p.Init(h, s.states); err != nil {
		t.Fatal(err)
	}
	return s
}

// mcN is the number of coordinates of a Monte Carlo run, at least 10^5
// even in short mode (which runs fewer settings instead): the standard
// error of the variance is then 0.39% of it, so that a 5% error in A lies 7.5
// standard errors beyond the acceptance band.
const mcN = 1 << 17

// mcEarly are the early steps at which the variance is checked against
// attenuation_t.
var mcEarly = []int{0, 1, 2, 5}

// mcCase is one Monte Carlo run: a stepper and the states it checks.
type mcCase struct {
	name   string
	run    stepper
	states map[string]attenModel
	// check, if set, is called after every step t with the stepper.
	check func(t *testing.T, step int, s stepper)
}

// runMonteCarlo drives c.run with g = w ~ N(0, σ²) and checks the
// variance of each state at the early steps against attenuation_t and at
// the end against attenuation.
func runMonteCarlo(t *testing.T, c mcCase, n int, sigma float64, rng *rand.Rand) {
	t.Helper()
	steps := 0
	for _, am := range c.states {
		steps = max(steps, stepsToSteady(t, am, 1e-6))
	}
	early := map[string]*gain.FiniteGain{}
	for s, am := range c.states {
		early[s] = am.finite()
	}
	g := make([]float32, n)
	s2 := sigma * sigma
	for step := range steps {
		for i := range g {
			g[i] = float32(sigma * rng.NormFloat64())
		}
		if err := c.run.step(g); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if c.check != nil {
			c.check(t, step, c.run)
		}
		if slices.Contains(mcEarly, step) {
			for s := range c.states {
				want, got := early[s].At(step), sampleVariance(c.run.state(s))/s2
				what := fmt.Sprintf("%s: %s after step %d (attenuation_t)", c.name, s, step)
				if want == 0 { // the noise has not reached s yet (a delayed copy)
					if got != 0 {
						t.Errorf("%s: variance/σ² = %.6g, derived 0", what, got)
					}
					continue
				}
				checkVariance(t, what, got, want, n)
			}
		}
	}
	for s, am := range c.states {
		checkVariance(t, fmt.Sprintf("%s: %s after %d steps (attenuation)", c.name, s, steps), sampleVariance(c.run.state(s))/s2, am.a, n)
	}
}

// mcRand returns the random source of one Monte Carlo case.
func mcRand(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(*mcSeed, stream)) }

// TestMonteCarloAttenuationFiber runs the generated FiBeR on pure noise.
func TestMonteCarloAttenuationFiber(t *testing.T) {
	u := attenShipped(t, "fiber")
	fn := u.Func
	omegas := []float64{0.3, 0.9, 1.0, 0.05, 0.6}
	if testing.Short() {
		omegas = omegas[:3]
	}
	for i, w := range omegas {
		t.Run(fmt.Sprintf("omega=%v", w), func(t *testing.T) {
			t.Parallel()
			h, err := fn.ApplySettings([]string{fmt.Sprintf("omega=%v", w)})
			if err != nil {
				t.Fatal(err)
			}
			n := mcN
			c := mcCase{
				name: fmt.Sprintf("fiber omega=%v", w),
				run:  newFiberStepper(t, w, n, 0.49),
				states: map[string]attenModel{
					"gt": attenModelAt(t, u, "gt", h),
					"r":  attenModelAt(t, u, "r", h),
				},
			}
			if want := (2 - w) / (4 - 3*w); math.Abs(c.states["gt"].a-want) > 1e-15 {
				t.Errorf("derived A(gt) = %.17g, want (2-ω)/(4-3ω) = %.17g", c.states["gt"].a, want)
			}
			runMonteCarlo(t, c, n, 0.7, mcRand(uint64(100+i)))
		})
	}
}

// TestMonteCarloAttenuationDisk runs the generated DiSK on pure noise.
func TestMonteCarloAttenuationDisk(t *testing.T) {
	u := attenShipped(t, "disk")
	fn := u.Func
	kappas := []float64{0.6, 0.1, 1, 0.25}
	if testing.Short() {
		kappas = kappas[:2]
	}
	for i, k := range kappas {
		t.Run(fmt.Sprintf("kappa=%v", k), func(t *testing.T) {
			t.Parallel()
			h, err := fn.ApplySettings([]string{fmt.Sprintf("kappa=%v", k)})
			if err != nil {
				t.Fatal(err)
			}
			n := mcN
			c := mcCase{
				name:   fmt.Sprintf("disk kappa=%v", k),
				run:    newDiskStepper(t, k, n, 1.5),
				states: map[string]attenModel{"gt": attenModelAt(t, u, "gt", h)},
			}
			if want := k / (2 - k); math.Abs(c.states["gt"].a-want) > 1e-15 {
				t.Errorf("derived A(gt) = %.17g, want κ/(2-κ) = %.17g", c.states["gt"].a, want)
			}
			runMonteCarlo(t, c, n, 1.3, mcRand(uint64(200+i)))
		})
	}
}

// TestMonteCarloAttenuationDoppler runs the generated DOPPLER filter on
// pure noise: the variance of y and of its delayed copy y1 must be the
// derived attenuation, which must be the ARMA(2,1) variance.
func TestMonteCarloAttenuationDoppler(t *testing.T) {
	u := attenShipped(t, "doppler")
	fn := u.Func
	settings := dopplerSettings
	if testing.Short() {
		settings = settings[:2]
	}
	for i, set := range settings {
		t.Run(fmt.Sprintf("%v", set), func(t *testing.T) {
			t.Parallel()
			h, err := fn.ApplySettings(set)
			if err != nil {
				t.Fatal(err)
			}
			n := mcN
			c := mcCase{
				name: fmt.Sprintf("doppler %v", set),
				run:  newDopplerStepper(t, set, n, 0.8),
				states: map[string]attenModel{
					"y":  attenModelAt(t, u, "y", h),
					"y1": attenModelAt(t, u, "y1", h),
				},
			}
			if want := dopplerARMA(fn, h); math.Abs(c.states["y"].a-want) > 1e-12*want {
				t.Errorf("derived A(y) = %.17g, ARMA(2,1) variance %.17g", c.states["y"].a, want)
			}
			runMonteCarlo(t, c, n, 0.9, mcRand(uint64(500+i)))
		})
	}
}

// TestDopplerStabilityMatchesIR holds the generated package's stability
// check (Hypers.Validate, with its copy of gain.SpectralRadius) to fibergen's
// (Func.CheckStability) over a grid of DOPPLER's feedback coefficients,
// inside and outside the stability triangle, and on its repeated real poles
// p (a1 = −2p, a2 = p²), which rounding can make defective.
func TestDopplerStabilityMatchesIR(t *testing.T) {
	u := attenShipped(t, "doppler")
	fn := u.Func
	var points [][2]float64
	for a1 := -1.95; a1 < 2; a1 += 0.15 {
		for a2 := -0.95; a2 < 1; a2 += 0.1 {
			points = append(points, [2]float64{a1, a2})
		}
	}
	for _, p := range []float64{0.5, -0.5, 0.25, 0.75, -0.75, 0.875, 0.9375} {
		points = append(points, [2]float64{-2 * p, p * p})
	}
	stable := 0
	for _, pt := range points {
		sets := []string{fmt.Sprintf("a1=%v", pt[0]), fmt.Sprintf("a2=%v", pt[1])}
		h := fn.DefaultHypers()
		h[fn.HyperIndex("a1")], h[fn.HyperIndex("a2")] = pt[0], pt[1]
		gh := doppler.Defaults()
		if err := errors.Join(gh.Set("a1", pt[0]), gh.Set("a2", pt[1])); err != nil {
			t.Fatal(err)
		}
		irErr, genErr := fn.CheckStability(h), gh.Validate()
		margin := min(1+pt[0]+pt[1], 1-pt[0]+pt[1], 1-math.Abs(pt[1]))
		if jury := margin > 0; math.Abs(margin) > 1e-9 && jury != (irErr == nil) {
			t.Errorf("%v: CheckStability = %v, but Jury's conditions say stable = %v", sets, irErr, jury)
		}
		if (irErr == nil) != (genErr == nil) || irErr != nil && irErr.Error() != genErr.Error() {
			t.Errorf("%v: CheckStability = %v, generated Validate = %v", sets, irErr, genErr)
		}
		if irErr == nil {
			stable++
		}
	}
	if stable == 0 || stable == len(points) {
		t.Errorf("%d of %d points stable: the grid misses one side of the triangle", stable, len(points))
	}
}

// TestFiniteAttenuationMatchesPaper checks attenuation_t(gt) of fiber_ft,
// as the host computes it (gain.FiniteGain on the derived model), against
// A_t(ω) from the Σ_t recursion of the paper's finite-time lemma.
func TestFiniteAttenuationMatchesPaper(t *testing.T) {
	u := attenShipped(t, "fiber_ft")
	fn := u.Func
	for _, w := range []float64{0.05, 0.3, 0.9, 1} {
		h, err := fn.ApplySettings([]string{fmt.Sprintf("omega=%v", w)})
		if err != nil {
			t.Fatal(err)
		}
		am := attenModelAt(t, u, "gt", h)
		fg := am.finite()
		for step := range 200 {
			got, want := fg.At(step), oracle.FiniteAttenuation(w, step)
			if math.Abs(got-want) > 1e-12*want {
				t.Fatalf("omega=%v, step %d: attenuation_t(gt) = %.17g, the lemma's A_t %.17g", w, step, got, want)
			}
		}
		if want := oracle.Attenuation(w); math.Abs(fg.At(10000)-want) > 1e-12*want {
			t.Errorf("omega=%v: A_t after 10000 steps is %.17g, want A(ω) = %.17g", w, fg.At(10000), want)
		}
	}
}

// TestMonteCarloAttenuationAlphaBeta runs the alpha-beta tracker in the
// interpreter at random stable settings.
func TestMonteCarloAttenuationAlphaBeta(t *testing.T) {
	u := mustCompile(t, "alphabeta.dsl", []byte(attenAlphaBeta))
	fn := u.Func
	ia, ib := fn.HyperIndex("alpha"), fn.HyperIndex("beta")
	settings := 4
	if testing.Short() {
		settings = 2
	}
	rng := mcRand(300)
	var hs [][]float64
	for draws := 0; len(hs) < settings; draws++ {
		if draws > 10000 {
			t.Fatalf("found only %d stable settings in %d draws", len(hs), draws)
		}
		h := fn.DefaultHypers()
		h[ia], h[ib] = 2*rng.Float64(), 4*rng.Float64()
		if h[ia] == 0 || h[ib] == 0 {
			continue
		}
		a, b := h[ia], h[ib]
		err := fn.CheckStability(h)
		if jury := 4-2*a-b > 0; (err == nil) != jury && math.Abs(4-2*a-b) > 1e-9 {
			t.Errorf("alpha=%v beta=%v: CheckStability = %v, but 4 - 2α - β = %v", a, b, err, 4-2*a-b)
		}
		if err != nil {
			continue
		}
		m, _ := fn.FilterValues(fn.Filter("l"), h)
		if gain.SpectralRadius(m, 2) > 0.95 { // keep the runs short
			continue
		}
		hs = append(hs, h)
	}
	for i, h := range hs {
		t.Run(fmt.Sprintf("alpha=%.4f,beta=%.4f", h[ia], h[ib]), func(t *testing.T) {
			t.Parallel()
			n := mcN
			const sigmaW2 = 0.25
			s := newInterpStepper(t, fn, h, n, sigmaW2)
			lModel := attenModelAt(t, u, "l", h)
			al := lModel.finite()
			c := mcCase{
				name: fmt.Sprintf("alpha-beta alpha=%v beta=%v", h[ia], h[ib]),
				run:  s,
				states: map[string]attenModel{
					"l": lModel,
					"s": attenModelAt(t, u, "s", h),
				},
				// The state al holds attenuation_t(l) as the step computed it.
				check: func(t *testing.T, step int, run stepper) {
					got, want := run.state("al")[n-1], float32(al.At(step))
					if got != want {
						t.Errorf("step %d: attenuation_t(l) = %v in the step, gain.FiniteGain %v", step, got, want)
					}
				},
			}
			a, b := h[ia], h[ib]
			den := a * (4 - 2*a - b)
			if want := (2*a*a + 2*b - 3*a*b) / den; math.Abs(c.states["l"].a-want) > 1e-12*want {
				t.Errorf("derived A(l) = %.17g, Kalata's formula %.17g", c.states["l"].a, want)
			}
			if want := 2 * b * b / den; math.Abs(c.states["s"].a-want) > 1e-12*want {
				t.Errorf("derived A(s) = %.17g, Kalata's formula %.17g", c.states["s"].a, want)
			}
			runMonteCarlo(t, c, n, math.Sqrt(sigmaW2), mcRand(uint64(400+i)))
		})
	}
}

// TestMonteCarloCheckCanFail feeds the acceptance rule draws of known
// variance: it must accept the true variance and reject 5% off.
func TestMonteCarloCheckCanFail(t *testing.T) {
	rng := mcRand(900)
	n := mcN
	xs := make([]float32, n)
	for _, v := range []float64{0.3, 1, 4.5} {
		for i := range xs {
			xs[i] = float32(math.Sqrt(v) * rng.NormFloat64())
		}
		got := sampleVariance(xs)
		if z := varianceZ(got, v, n); math.Abs(z) > mcZ {
			t.Errorf("variance %v: sample variance %v is %.1f standard errors off", v, got, z)
		}
		for _, w := range []float64{v * 1.05, v * 0.95} {
			if z := varianceZ(got, w, n); math.Abs(z) <= mcZ {
				t.Errorf("variance %v: the rule accepts %v (z = %.2f)", v, w, z)
			}
		}
	}
}

// impulseSum runs s on g = 1 at step 0 and g = 0 afterwards (n = 1
// coordinate) for steps steps and returns Σ_j h_j² for the state's values
// h_j after step j, checking each h_j against the model's (M^j b)[target].
func impulseSum(t *testing.T, s stepper, state string, am attenModel, steps int) float64 {
	t.Helper()
	k := len(am.b)
	u := slices.Clone(am.b)
	peak := 0.0
	for _, x := range am.b {
		peak = max(peak, math.Abs(x))
	}
	sum := 0.0
	g := []float32{1}
	for j := range steps {
		if err := s.step(g); err != nil {
			t.Fatal(err)
		}
		g[0] = 0
		h := float64(s.state(state)[0])
		sum += h * h
		if math.Abs(h-u[am.target]) > 1e-5*max(peak, 1) {
			t.Errorf("%s after step %d: %.9g, impulse response of the model %.9g", state, j, h, u[am.target])
		}
		next := make([]float64, k)
		for i := range k {
			for l := range k {
				next[i] += am.m[i*k+l] * u[l]
			}
			peak = max(peak, math.Abs(next[i]))
		}
		u = next
	}
	return sum
}

// checkImpulse compares the impulse response's energy with A.
func checkImpulse(t *testing.T, what string, s stepper, state string, am attenModel) {
	t.Helper()
	steps := stepsToSteady(t, am, 1e-9)
	got := impulseSum(t, s, state, am, steps)
	if math.Abs(got-am.a) > 1e-4*am.a {
		t.Errorf("%s: Σ h_j² of %s over %d steps = %.9g, derived A = %.9g (rel. error %.2g)", what, state, steps, got, am.a, math.Abs(got-am.a)/am.a)
	}
}

// TestImpulseResponseAttenuation checks A against the energy of the
// impulse response of the real step: the generated packages and the
// interpreter.
func TestImpulseResponseAttenuation(t *testing.T) {
	t.Run("fiber", func(t *testing.T) {
		u := attenShipped(t, "fiber")
		fn := u.Func
		for _, w := range []float64{0.3, 0.9, 1, 0.02, 0.5} {
			h, err := fn.ApplySettings([]string{fmt.Sprintf("omega=%v", w)})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"gt", "r"} {
				am := attenModelAt(t, u, s, h)
				checkImpulse(t, fmt.Sprintf("generated fiber omega=%v", w), newFiberStepper(t, w, 1, 0.5), s, am)
				checkImpulse(t, fmt.Sprintf("interpreted fiber omega=%v", w), newInterpStepper(t, fn, h, 1, 0.5), s, am)
			}
		}
	})
	t.Run("disk", func(t *testing.T) {
		u := attenShipped(t, "disk")
		fn := u.Func
		for _, k := range []float64{0.6, 0.1, 1, 0.01} {
			h, err := fn.ApplySettings([]string{fmt.Sprintf("kappa=%v", k)})
			if err != nil {
				t.Fatal(err)
			}
			am := attenModelAt(t, u, "gt", h)
			checkImpulse(t, fmt.Sprintf("generated disk kappa=%v", k), newDiskStepper(t, k, 1, 0.5), "gt", am)
			checkImpulse(t, fmt.Sprintf("interpreted disk kappa=%v", k), newInterpStepper(t, fn, h, 1, 0.5), "gt", am)
		}
	})
	t.Run("doppler", func(t *testing.T) {
		u := attenShipped(t, "doppler")
		fn := u.Func
		for _, set := range dopplerSettings {
			h, err := fn.ApplySettings(set)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"y", "y1"} {
				am := attenModelAt(t, u, s, h)
				checkImpulse(t, fmt.Sprintf("generated doppler %v", set), newDopplerStepper(t, set, 1, 0.5), s, am)
				checkImpulse(t, fmt.Sprintf("interpreted doppler %v", set), newInterpStepper(t, fn, h, 1, 0.5), s, am)
			}
		}
	})
	dsls := []struct {
		name, src string
		states    []string
		settings  [][]string
	}{
		{"alpha-beta", attenAlphaBeta, []string{"l", "s"}, [][]string{nil, {"alpha=1.5", "beta=0.9"}, {"alpha=0.1", "beta=0.005"}, {"alpha=1.9", "beta=0.1"}}},
		{"three EMAs", attenCascade, []string{"e1", "e2", "e3"}, [][]string{nil, {"kappa=0.9"}, {"kappa=0.05"}, {"kappa=1"}}},
		{"alpha-beta-gamma", attenABG, []string{"x", "v", "acc"}, [][]string{nil, {"alpha=0.9", "beta=0.5", "gamma=0.05"}, {"alpha=1.2", "beta=0.8", "gamma=0.1"}}},
	}
	for _, d := range dsls {
		t.Run(d.name, func(t *testing.T) {
			u := mustCompile(t, d.name+".dsl", []byte(d.src))
			fn := u.Func
			for _, set := range d.settings {
				h, err := fn.ApplySettings(set)
				if err != nil {
					t.Fatalf("%v: %v", set, err)
				}
				for _, s := range d.states {
					checkImpulse(t, fmt.Sprintf("%s %v", d.name, set), newInterpStepper(t, fn, h, 1, 0.5), s, attenModelAt(t, u, s, h))
				}
			}
		})
	}
}
