package tests

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/tests/oracle"
)

var oracleSeeds = flag.Int("oracle.seeds", 2, "random seeds per oracle test case (try 25 when changing the bound)")

// oracleSteps is T, the number of steps of every oracle test run.
const oracleSteps = 256

// noiseSeed keys the Philox noise that the correlated-noise optimizers
// draw in the oracle tests.
const noiseSeed = 0x5eed

// drawZ is z of coordinate i at step t: the standard normal draw of a
// kernel keyed by noiseSeed (docs/noise.md), exact in float32.
func drawZ(t, i int) float64 {
	return float64(rng.Normal(noiseSeed, uint32(t), rng.GradientSite, uint64(i)))
}

// hyperSets are the hypers each optimizer runs with: the defaults, then
// overrides through the generated Hypers.Set and `fibergen run --set`.
// Where κ moves, γ moves with it to keep the two_point weight
// a = (1 − κ)/(κγ) in [0, 1], which Update requires, and to check the
// look-ahead point with another γ.
var hyperSets = map[string][][]setting{
	"fiber": {
		nil,
		{{"wd", 0.01}, {"omega", 0.5}, {"kappa", 0.3}, {"gamma", 2.5}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}},
	},
	"disk": {
		nil,
		{{"wd", 0.01}, {"kappa", 0.3}, {"gamma", 2.5}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"kappa", 1}},
	},
	"disk_corr": {
		nil,
		{{"wd", 0.01}, {"kappa", 0.3}, {"gamma", 2.5}, {"eps_v", 1e-6}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"kappa", 1}},
	},
	"abtrack": {
		nil,
		{{"wd", 0.01}, {"alpha", 0.8}, {"beta", 0.3}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"alpha", 1}, {"beta", 1}},
	},
	"dp_adamw": {
		nil,
		{{"wd", 0.01}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}},
	},
	"dp_adamw_bf16": {
		nil,
		{{"wd", 0.01}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}},
	},
	"fiber_bf16": {
		nil,
		{{"wd", 0.01}, {"omega", 0.5}, {"kappa", 0.3}, {"gamma", 2.5}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}},
	},
	"dp_sgd": {
		nil,
		{{"lr", 0.05}},
	},
	"dp_lion": {
		nil,
		{{"wd", 0.1}},
		{{"lr", 1e-3}, {"beta1", 1}, {"beta2", 0.9}, {"wd", 0.01}},
	},
	"schedule_free": {
		nil,
		{{"wd", 0.01}, {"warmup", 5}},
		{{"lr", 1e-2}, {"beta1", 0.5}, {"beta2", 0.99}, {"eps", 1e-6}, {"wd", 0.1}, {"warmup", 0.5}},
	},
	"ademamix": {
		nil,
		{{"wd", 0.01}, {"warmup", 50}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"beta3", 0.99}, {"alpha", 8}, {"eps", 1e-6}, {"warmup", 1000}},
	},
	"dp_adam": {
		nil,
		{{"wd", 0.01}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"wd", 0.1}},
	},
	"dp_adambc": {
		nil,
		{{"wd", 0.01}, {"eps_v", 1e-6}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 0}, {"eps_v", 1e-6}}, // Tang et al.'s form: no ε
	},
	"fiber_nocorr": {
		nil,
		{{"wd", 0.01}, {"omega", 0.5}, {"eps_v", 0}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}},
	},
	"fiber_nfloor": {
		nil,
		{{"wd", 0.01}, {"omega", 0.5}, {"kappa_v", 0.1}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}, {"kappa_v", 4}},
	},
	"fiber_rfloor": {
		nil,
		{{"wd", 0.01}, {"omega", 0.5}, {"rho", 0.05}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}, {"rho", 0.9}},
	},
	"fiber_bccorr": {
		nil,
		{{"wd", 0.01}, {"omega", 0.5}, {"kappa", 0.8}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}},
	},
	"fiber_ft": {
		nil,
		{{"wd", 0.01}, {"omega", 0.3}}, // A_t approaches A slowly: ρ = √0.7
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"omega", 1}},
	},
	"fiber_cosine": {
		nil, // warmup over 100 steps, then the first of 10000 of the cosine
		{{"warmup", 10}, {"steps", 200}, {"lr_min", 1e-5}, {"wd", 0.01}, {"lr", 1e-2}}, // the whole cosine, then lr_min
		{{"warmup", 1}, {"steps", 1}, {"lr", 1e-2}, {"omega", 0.5}},                    // no warmup, no cosine: lr_min = 0 from step 1
	},
	// The correlated-noise optimizers draw their noise in every case (their
	// step privatizes g), σ_w² from the stream: the designed filter of
	// fibergen mechanism --steps 1000 --min-sep 1000 --buffers 2, and one of
	// a single buffer (--steps 300 --min-sep 30 --buffers 1).
	"blt_sgd": {
		nil,
		{{"mu", 0}, {"lr", 0.05}, {"blt_decay1", 0.985032976}, {"blt_decay2", 0.534157753}, {"blt_weight1", -0.0022288668}, {"blt_weight2", -0.384649992}},
		{{"lr", 0.003}, {"mu", 0.5}, {"blt_decay1", 0.514759719}, {"blt_decay2", 0}, {"blt_weight1", -0.435439914}, {"blt_weight2", 0}},
	},
	"blt_adam": {
		nil,
		{{"wd", 0.01}, {"blt_decay1", 0.985032976}, {"blt_decay2", 0.534157753}, {"blt_weight1", -0.0022288668}, {"blt_weight2", -0.384649992}},
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"wd", 0.1}, {"blt_decay1", 0.514759719}, {"blt_decay2", 0}, {"blt_weight1", -0.435439914}, {"blt_weight2", 0}},
	},
	"doppler": {
		nil,
		// Complex poles of modulus √0.4 (a resonant low-pass), unit DC gain.
		{{"wd", 0.01}, {"a1", -1.2}, {"a2", 0.4}, {"b0", 0.1}, {"b1", 0.1}},
		// A first-order EMA with κ = 0.5: a2 = b1 = 0.
		{{"lr", 1e-2}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}, {"eps_v", 1e-6}, {"a1", -0.5}, {"a2", 0}, {"b0", 0.5}, {"b1", 0}},
	},
}

// oracleCase is one run of an optimizer over a gradient stream.
type oracleCase struct {
	opt    *optimizer
	stream stream
	sets   []setting
	seed   uint64
	n      int
}

func (c oracleCase) String() string {
	sets := "defaults"
	if len(c.sets) > 0 {
		var parts []string
		for _, s := range c.sets {
			parts = append(parts, fmt.Sprintf("%s=%g", s.name, s.value))
		}
		sets = strings.Join(parts, ",")
	}
	return fmt.Sprintf("%s/%s/%s/seed=%d", c.opt.name, c.stream.name, sets, c.seed)
}

// inputs returns θ_0 and the gradients of the case, from its own seed.
func (c oracleCase) inputs() (theta0, grads []float32) {
	h := fnv.New64a()
	fmt.Fprint(h, c.opt.name, c.stream.name)
	r := rand.New(rand.NewPCG(c.seed, h.Sum64()))
	return initialTheta(r, c.n), c.stream.gradients(r, c.n, oracleSteps)
}

// TestOracle checks every generated optimizer, step by step and over whole
// trajectories, against its float64 oracle within the rounding bound of
// bound_test.go, and θ_T of `fibergen run` against the same bound.
func TestOracle(t *testing.T) {
	for _, opt := range optimizers {
		for _, sets := range hyperSets[opt.name] {
			for _, st := range streams {
				for seed := range uint64(*oracleSeeds) {
					c := oracleCase{opt: opt, stream: st, sets: sets, seed: seed, n: []int{512, 257}[seed%2]}
					t.Run(c.String(), func(t *testing.T) {
						t.Parallel()
						res := c.run(t)
						if seed == 0 {
							c.checkCLI(t, res)
						}
					})
				}
			}
		}
	}
}

// oracleResult is what a run leaves for the `fibergen run` check.
type oracleResult struct {
	theta0, grads []float32
	final         []ev // θ_T of the free-running oracle with its bound
}

// run drives the generated package, a free-running oracle and an oracle
// restarted before every step from the package's state, and checks the
// package against both.
func (c oracleCase) run(t *testing.T) oracleResult {
	theta0, grads := c.inputs()
	impl := c.newImpl(t)
	restarted, free := c.newTracker(t, "stepwise", theta0), c.newTracker(t, "trajectory", theta0)
	counts := &correctionCounts{}
	theta := slices.Clone(theta0)
	for s := range oracleSteps {
		g32 := grads[s*c.n : (s+1)*c.n]
		g := to64(g32)
		restarted.restart(s, theta, impl.States())
		restarted.step(s, c.stream.sigmaW2, g)
		free.step(s, c.stream.sigmaW2, g)
		if err := impl.Update(theta, g32, c.stream.sigmaW2); err != nil {
			t.Fatal(err)
		}
		restarted.compare(t, s, c.opt.states, theta, impl.States())
		free.compare(t, s, c.opt.states, theta, impl.States())
		if c.opt.name == "fiber" {
			counts.add(c, s, free.ref.States()[3])
		}
	}
	restarted.check.report(t)
	free.check.report(t)
	if c.opt.name == "fiber" {
		counts.check(t, c)
	}
	return oracleResult{theta0: theta0, grads: grads, final: free.bound.theta}
}

// tracker is an oracle and its bound, run next to the implementation.
type tracker struct {
	check *boundCheck
	ref   reference
	bound *boundRun
	theta []float64 // the oracle's θ
}

func (c oracleCase) newTracker(t *testing.T, what string, theta0 []float32) *tracker {
	ref, b, err := c.opt.newRef(c.sets, c.n)
	if err != nil {
		t.Fatal(err)
	}
	if c.opt.noise {
		ref.(noiseReader).readNoise(drawZ)
	}
	return &tracker{check: &boundCheck{what: what}, ref: ref, bound: c.newBoundRun(b, theta0), theta: to64(theta0)}
}

// newImpl returns the case's implementation; a correlated-noise one draws
// its noise (noiseSeed).
func (c oracleCase) newImpl(t *testing.T) implementation {
	impl, err := c.opt.newImpl(c.sets, c.n)
	if err != nil {
		t.Fatal(err)
	}
	if c.opt.noise {
		impl.(noiseDrawer).drawNoise(noiseSeed)
	}
	return impl
}

// newBoundRun is newBoundRun for the case's optimizer, with the draws of
// its noise if it draws any.
func (c oracleCase) newBoundRun(b bounded, theta0 []float32) *boundRun {
	r := newBoundRun(b, len(c.opt.states), to64(theta0))
	if c.opt.noise {
		r.draw = drawZ
	}
	return r
}

// restart moves the oracle and the bound to the implementation's θ and
// states before step s.
func (tr *tracker) restart(s int, theta []float32, states [][]float32) {
	tr.theta = to64(theta)
	tr.ref.SetT(s)
	for k, buf := range tr.ref.States() {
		for i := range buf {
			buf[i] = float64(states[k][i])
		}
	}
	tr.bound.reset(theta, states)
}

func (tr *tracker) step(s int, sigmaW2 float64, g []float64) {
	tr.ref.Step(tr.theta, g, sigmaW2)
	tr.bound.step(s, sigmaW2, g)
}

// compare checks the implementation's θ and states after step s against
// the bound, and the bound's values against the oracle's.
func (tr *tracker) compare(t *testing.T, s int, names []string, theta []float32, states [][]float32) {
	tr.check.consistent(t, s, "theta", tr.bound.theta, tr.theta)
	tr.check.check(s, "theta", theta, tr.bound.theta)
	for k, name := range names {
		tr.check.consistent(t, s, name, tr.bound.states[k], tr.ref.States()[k])
		tr.check.check(s, name, states[k], tr.bound.states[k])
	}
}

// checkCLI runs `fibergen run` on the case and checks θ_T against the
// free-running oracle's bound.
func (c oracleCase) checkCLI(t *testing.T, res oracleResult) {
	var noise []string
	if c.opt.noise {
		noise = []string{"--noise", "on", "--seed", fmt.Sprint(noiseSeed)}
	}
	_, theta := runFibergen(t, repoPath("optimizers", c.opt.name+".dsl"), res.theta0, res.grads, c.stream.sigmaW2, c.sets, noise...)
	b := &boundCheck{what: "fibergen run"}
	b.check(oracleSteps-1, "theta", theta, res.final)
	b.report(t)
}

// boundRun runs a bounded step over every coordinate.
type boundRun struct {
	b      bounded
	theta  []ev
	states [][]ev // [state][coordinate]
	aux    []float64
	st     []ev                   // one coordinate's states, scratch
	draw   func(t, i int) float64 // the noise a noisyBounded step draws; nil: none
}

// newBoundRun starts from theta0 with every state zero, the initial value
// of each shipped optimizer's states.
func newBoundRun(b bounded, numStates int, theta0 []float64) *boundRun {
	r := &boundRun{b: b, theta: make([]ev, len(theta0)), states: make([][]ev, numStates),
		aux: make([]float64, len(theta0)), st: make([]ev, numStates)}
	for i, x := range theta0 {
		r.theta[i] = exact(x)
	}
	for k := range r.states {
		r.states[k] = make([]ev, len(theta0))
		for i := range r.states[k] {
			r.states[k][i] = exact(0)
		}
	}
	return r
}

// reset restarts from exact copies of an implementation's θ and states.
func (r *boundRun) reset(theta []float32, states [][]float32) {
	for i, x := range theta {
		r.theta[i] = exact(float64(x))
		r.aux[i] = 0
	}
	for k := range r.states {
		for i, x := range states[k] {
			r.states[k][i] = exact(float64(x))
		}
	}
}

func (r *boundRun) step(t int, sigmaW2 float64, g []float64) {
	for i := range r.theta {
		for k := range r.st {
			r.st[k] = r.states[k][i]
		}
		if r.draw != nil {
			r.theta[i] = r.b.(noisyBounded).noisyStep(t, sigmaW2, r.draw(t, i), r.theta[i], g[i], r.st, &r.aux[i])
		} else {
			r.theta[i] = r.b.step(t, sigmaW2, r.theta[i], g[i], r.st, &r.aux[i])
		}
		for k := range r.st {
			r.states[k][i] = r.st[k]
		}
	}
}

// boundCheck collects the comparisons of implementation values with ev
// bounds: the worst ratio |impl − x| / e and the first violation.
type boundCheck struct {
	what       string
	checked    int
	worst      float64
	violations int
	first      string
	mismatch   bool // the bound's x disagreed with the oracle: a bug in the test
}

func (b *boundCheck) check(step int, buf string, impl []float32, want []ev) {
	for i, w := range want {
		b.checked++
		d := math.Abs(float64(impl[i]) - w.x)
		if w.e > 0 {
			b.worst = max(b.worst, d/w.e)
		}
		if within(d, w.e) {
			continue
		}
		if b.violations == 0 {
			b.first = fmt.Sprintf("step %d, %s[%d]: implementation %.9g, oracle %.17g, |difference| %.3g > bound %.3g",
				step, buf, i, impl[i], w.x, d, w.e)
		}
		b.violations++
	}
}

// within reports d ≤ e, allowing for the float64 rounding of the bound's
// own arithmetic (a few hundred operations of relative error 2^-53 at most
// over a run, far below the 2^-30 allowed here). The bound is sharp: single
// operations reach 0.999 of it when a result lies just above a power of 2.
func within(d, e float64) bool { return d <= e*(1+0x1p-30) }

// consistent checks that the bound arithmetic computes the oracle's values
// (up to float64 rounding, which may be fused differently).
func (b *boundCheck) consistent(t *testing.T, step int, buf string, got []ev, want []float64) {
	if b.mismatch {
		return
	}
	for i, g := range got {
		if g.x != want[i] && !(math.Abs(g.x-want[i]) <= 1e-12*(math.Abs(g.x)+math.Abs(want[i]))) {
			t.Errorf("%s: step %d, %s[%d]: the bound arithmetic computes %.17g but the oracle %.17g: bound_test.go and tests/oracle disagree",
				b.what, step, buf, i, g.x, want[i])
			b.mismatch = true
			return
		}
	}
}

func (b *boundCheck) report(t *testing.T) {
	t.Helper()
	if b.violations > 0 {
		t.Errorf("%s: %d of %d values outside the rounding bound; first: %s", b.what, b.violations, b.checked, b.first)
	}
	t.Logf("%s: %d values, worst |impl − oracle| / bound = %.3g", b.what, b.checked, b.worst)
}

// correctionCounts counts, over the (coordinate, step) pairs of a FiBeR run
// with nonzero gradients, where the correction is active (v̂ − A σ_w² ≥ ε_v
// and the correction removes at least 10% of v̂) and where the floor acts
// (v̂ − A σ_w² < ε_v).
type correctionCounts struct {
	pairs, active, floored int
}

func (cc *correctionCounts) add(c oracleCase, step int, v []float64) {
	h, _ := fiberHypers(c.sets)
	corr := oracle.Attenuation(h.Omega) * c.stream.sigmaW2
	for i, vi := range v {
		if isZeroCoord(i) {
			continue
		}
		vhat := vi / (1 - math.Pow(h.Beta2, float64(step+1)))
		cc.pairs++
		switch {
		case vhat-corr < h.EpsV:
			cc.floored++
		case corr >= 0.1*vhat:
			cc.active++
		}
	}
}

// check requires both regimes of the correction in the stream built for it,
// so that the FiBeR cases cannot pass without exercising it.
func (cc *correctionCounts) check(t *testing.T, c oracleCase) {
	active, floored := float64(cc.active)/float64(cc.pairs), float64(cc.floored)/float64(cc.pairs)
	t.Logf("correction active on %.1f%% of (coordinate, step) pairs, floored on %.1f%%", 100*active, 100*floored)
	if c.stream.name != "drift" {
		return
	}
	const minShare = 0.15
	if active < minShare || floored < minShare {
		t.Errorf("the drift stream should both apply FiBeR's correction and hit its floor on at least %.0f%% of the pairs each; active %.1f%%, floored %.1f%%",
			100*minShare, 100*active, 100*floored)
	}
}

// TestOracleDiscriminates shows that the bound is tight enough to tell
// FiBeR from its near relatives: the oracles of plausible mistakes must fall
// outside the bound on many (coordinate, step) pairs of θ when restarted
// from the implementation's state before each step, and on many coordinates
// of θ_T when run free, while the true oracle falls outside on none.
func TestOracleDiscriminates(t *testing.T) {
	c := oracleCase{opt: optimizerNamed("fiber"), stream: streams[0], seed: 7, n: 512}
	theta0, grads := c.inputs()
	def := oracle.DefaultFiBeR()
	a := oracle.Attenuation(def.Omega)
	swapped := def
	swapped.Beta1, swapped.Beta2 = def.Beta2, def.Beta1
	for _, m := range []struct {
		name        string
		h           oracle.FiBeRHypers
		sigmaW2     float64
		minStepwise float64 // the share of (coordinate, step) pairs the mutant must miss
		minFinal    float64 // the share of coordinates of θ_T it must miss
	}{
		{"paper", def, c.stream.sigmaW2, 0, 0},
		{"A = 1 instead of A(ω)", def, c.stream.sigmaW2 / a, 0.3, 0.3},
		{"no correction", def, 0, 0.3, 0.9},
		{"β1 and β2 swapped", swapped, c.stream.sigmaW2, 0.9, 0.9},
		// The next two keep A(ω) σ_w² as the paper's by scaling σ_w², so
		// that only the filter changes.
		{"ω = 0.85 instead of 0.9", withOmega(def, 0.85), c.stream.sigmaW2 * a / oracle.Attenuation(0.85), 0.3, 0.3},
		{"no filter (ω = 1)", withOmega(def, 1), c.stream.sigmaW2 * a, 0.3, 0.3},
	} {
		stepwise, final := missedShares(t, c, theta0, grads, newFiberBound(m.h), m.sigmaW2)
		t.Logf("%s: outside the bound on %.1f%% of the (coordinate, step) pairs and %.1f%% of the coordinates of θ_T",
			m.name, 100*stepwise, 100*final)
		switch {
		case m.minStepwise == 0 && (stepwise > 0 || final > 0):
			t.Errorf("%s: outside the bound on %.3g%% of the pairs and %.3g%% of θ_T, want none", m.name, 100*stepwise, 100*final)
		case stepwise < m.minStepwise || final < m.minFinal:
			t.Errorf("%s: outside the bound on only %.1f%% of the pairs (want %.0f%%) and %.1f%% of θ_T (want %.0f%%): the bound cannot tell this mistake from rounding",
				m.name, 100*stepwise, 100*m.minStepwise, 100*final, 100*m.minFinal)
		}
	}
}

// missedShares runs the generated package on the case and returns the share
// of (nonzero coordinate, step) pairs of θ where it is outside b's bound when
// b restarts from its state before each step, and the share of nonzero
// coordinates of θ_T outside b's bound when b runs free.
func missedShares(t *testing.T, c oracleCase, theta0, grads []float32, b bounded, sigmaW2 float64) (stepwise, final float64) {
	impl := c.newImpl(t)
	theta := slices.Clone(theta0)
	free, restart := c.newBoundRun(b, theta0), c.newBoundRun(b, theta0)
	missed, pairs := 0, 0
	for s := range oracleSteps {
		g := to64(grads[s*c.n : (s+1)*c.n])
		restart.reset(theta, impl.States())
		restart.step(s, sigmaW2, g)
		free.step(s, sigmaW2, g)
		if err := impl.Update(theta, grads[s*c.n:(s+1)*c.n], c.stream.sigmaW2); err != nil {
			t.Fatal(err)
		}
		m, p := countMissed(theta, restart.theta)
		missed, pairs = missed+m, pairs+p
	}
	m, p := countMissed(theta, free.theta)
	return float64(missed) / float64(pairs), float64(m) / float64(p)
}

// countMissed counts the nonzero coordinates where impl is outside want's
// bound, and the nonzero coordinates.
func countMissed(impl []float32, want []ev) (missed, nonzero int) {
	for i, w := range want {
		if isZeroCoord(i) {
			continue
		}
		nonzero++
		if !within(math.Abs(float64(impl[i])-w.x), w.e) {
			missed++
		}
	}
	return missed, nonzero
}

// withOmega returns h with ω replaced.
func withOmega(h oracle.FiBeRHypers, omega float64) oracle.FiBeRHypers {
	h.Omega = omega
	return h
}

// TestOracleFirstStep checks the oracles themselves against the closed form
// of their first step from zero state, worked out by hand: g̃_0 = ω g for
// FiBeR and its ablations (with A_0 = ω² for the finite-time one), κ g for
// DiSK and b0 g for DOPPLER's filter, m̂_0 = g̃_0, v̂_0 = g̃_0².
func TestOracleFirstStep(t *testing.T) {
	const theta0, g, sigmaW2 = 0.5, -0.3, 0.01
	f := oracle.DefaultFiBeR()
	f.Wd = 0.1
	a := (2 - f.Omega) / (4 - 3*f.Omega)
	gtF := f.Omega * g
	wantFiber := (1-f.Lr*f.Wd)*theta0 - f.Lr*gtF/(math.Sqrt(math.Max(gtF*gtF-a*sigmaW2, f.EpsV))+f.Eps)
	d := oracle.DefaultDiSK()
	gtD := d.Kappa * g
	wantDisk := theta0 - d.Lr*gtD/(math.Abs(gtD)+d.Eps)
	w := oracle.DefaultAdamW()
	wantAdamW := theta0 - w.Lr*g/(math.Abs(g)+w.Eps)
	coupled := w
	coupled.Wd = 0.1
	gw := g + coupled.Wd*theta0 // DP-Adam's moments see g + λθ
	wantAdam := theta0 - w.Lr*gw/(math.Abs(gw)+w.Eps)
	wantAdamBC := theta0 - w.Lr*g/(math.Sqrt(math.Max(g*g-sigmaW2, 1e-8))+w.Eps)
	floored := func(c, floor float64) float64 { // FiBeR's first step with the correction c and the floor
		return (1-f.Lr*f.Wd)*theta0 - f.Lr*gtF/(math.Sqrt(math.Max(gtF*gtF-c, floor))+f.Eps)
	}
	fiberWith := func(c float64) float64 { return floored(c, f.EpsV) }
	p := oracle.DefaultDoppler()
	// y_0 = b0 g and c_0 = b0, so y_0/c_0 = g, and its noise is all of σ_w².
	wantDoppler := theta0 - p.Lr*g/(math.Sqrt(math.Max(g*g-sigmaW2, p.EpsV))+p.Eps)
	// From empty buffers the BLT noise of step 0 is the draw itself, w_0 = z_0.
	const z0 = 0.7
	draw := func(int, int) float64 { return z0 }
	gz := g + math.Sqrt(sigmaW2)*z0
	sgdm := oracle.NewBLTSGD(oracle.SGDMomentum{Lr: 0.01, Mu: 0.9}, defaultBLT(), 1)
	sgdm.Draw = draw
	bltAdam := oracle.NewBLTAdam(coupled, defaultBLT(), 1)
	bltAdam.Draw = draw
	gwz := gz + coupled.Wd*theta0
	for _, c := range []struct {
		name string
		step func(theta, g []float64, sigmaW2 float64)
		want float64
	}{
		{"fiber", oracle.NewFiBeR(f, 1).Step, wantFiber},
		{"disk", oracle.NewDiSK(d, 1).Step, wantDisk},
		{"dp_adamw", oracle.NewDPAdamW(w, 1).Step, wantAdamW},
		{"dp_sgd", oracle.NewDPSGD(0.1).Step, theta0 - 0.1*g},
		{"dp_adam", oracle.NewDPAdam(coupled, 1).Step, wantAdam},
		{"dp_adambc", oracle.NewDPAdamBC(w, 1e-8, 1).Step, wantAdamBC},
		{"fiber_nocorr", oracle.NewFiBeRNoCorr(f, 1).Step, fiberWith(0)},
		{"fiber_bccorr", oracle.NewFiBeRBCCorr(f, 1).Step, fiberWith(sigmaW2)},
		{"fiber_ft", oracle.NewFiBeRFT(f, 1).Step, fiberWith(f.Omega * f.Omega * sigmaW2)}, // A_0 = ω²
		{"fiber_nfloor", oracle.NewFiBeRNoiseFloor(f, 2, 1).Step, floored(a*sigmaW2, 2*a*sigmaW2)},
		{"fiber_rfloor", oracle.NewFiBeRRelFloor(f, 0.5, 1).Step, floored(a*sigmaW2, 0.5*gtF*gtF)},
		{"doppler", oracle.NewDoppler(p, 1).Step, wantDoppler},
		{"blt_sgd", sgdm.Step, theta0 - 0.01*gz}, // m_0 = g_0
		{"blt_adam", bltAdam.Step, theta0 - w.Lr*gwz/(math.Abs(gwz)+w.Eps)},
	} {
		theta := []float64{theta0}
		c.step(theta, []float64{g}, sigmaW2)
		if math.Abs(theta[0]-c.want) > 1e-15 {
			t.Errorf("%s: θ_1 = %.17g, want %.17g", c.name, theta[0], c.want)
		}
	}
}

// TestOracleBLTNoise checks the oracles' noise recursion against the
// closed form of the filter: from x = 0 and σ_w = 1, the privatized
// gradient of step t is w_t = Σ_s c_{t−s} z_s with c_0 = 1 and
// c_k = Σ_i ω̂_i θ̂_i^(k−1), at the shipped filter and at one of one buffer.
func TestOracleBLTNoise(t *testing.T) {
	const steps, n = 60, 3
	for _, b := range []oracle.BLT{defaultBLT(), {Decay: []float64{0.5}, Weight: []float64{-0.4}}} {
		nz := oracle.NewBLTNoise(b, n)
		nz.Draw = drawZ
		for step := range steps {
			w := nz.Privatize(step, make([]float64, n), 1)
			for i := range n {
				want := 0.0
				for s := 0; s <= step; s++ {
					want += b.Coefficient(step-s) * drawZ(s, i)
				}
				if math.Abs(w[i]-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("%+v: step %d, coordinate %d: w = %.17g, want Σ c_k z_(t-k) = %.17g", b, step, i, w[i], want)
				}
			}
		}
	}
}

// TestOracleDiscriminatesFamily shows, as TestOracleDiscriminates does for
// FiBeR, that the bound tells each added optimizer from its nearest
// relative: the relative's bound, restarted from the implementation's state
// before each step, must miss the implementation on a share of the
// (coordinate, step) pairs, while the optimizer's own bound misses none.
func TestOracleDiscriminatesFamily(t *testing.T) {
	adamW, fiberH, dop := oracle.DefaultAdamW(), oracle.DefaultFiBeR(), oracle.DefaultDoppler()
	decayed := adamW
	decayed.Wd = 0.01
	slowFiber := withOmega(fiberH, 0.3)
	shiftedPole := dop
	shiftedPole.A2 = 0.26
	sf := oracle.DefaultScheduleFree()
	warm, warmSets := oracle.DefaultAdEMAMix(), []setting{{"warmup", 500}}
	warm.Warmup = 500
	sgdm, blt := oracle.SGDMomentum{Lr: 0.01, Mu: 0.9}, bltFilterBound{defaultBLT()}
	white := bltFilterBound{oracle.BLT{Decay: blt.b.Decay, Weight: []float64{0, 0}}}                                 // w = z
	flipped := bltFilterBound{oracle.BLT{Decay: blt.b.Decay, Weight: []float64{-blt.b.Weight[0], -blt.b.Weight[1]}}} // w = z − ω̂·s
	for _, m := range []struct {
		name, opt   string
		sets        []setting
		b           bounded
		minStepwise float64
	}{
		{"dp_adam", "dp_adam", []setting{{"wd", 0.01}}, adamBound{decayed}, 0},
		{"dp_adam: decoupled instead of coupled weight decay", "dp_adam", []setting{{"wd", 0.01}}, adamWBound{decayed}, 0.3},
		{"dp_adambc", "dp_adambc", nil, adamBCBound{h: adamW, epsV: 1e-8}, 0},
		{"dp_adambc: no correction (DP-AdamW)", "dp_adambc", nil, adamWBound{adamW}, 0.3},
		{"fiber_bccorr", "fiber_bccorr", nil, newFiberAblationBound(fiberH, fullCorrection), 0},
		{"fiber_bccorr: A(ω) instead of 1 (FiBeR)", "fiber_bccorr", nil, newFiberBound(fiberH), 0.3},
		{"fiber_nocorr", "fiber_nocorr", nil, newFiberAblationBound(fiberH, noCorrection), 0},
		{"fiber_nocorr: A(ω) subtracted (FiBeR)", "fiber_nocorr", nil, newFiberBound(fiberH), 0.3},
		{"fiber_ft", "fiber_ft", []setting{{"omega", 0.3}}, newFiberAblationBound(slowFiber, finiteTimeCorrection), 0},
		// A − A_t shrinks as (1 − ω)^t, so only the first steps of the 256
		// can differ by more than rounding: 2% is 5 steps.
		{"fiber_ft: A(ω) instead of A_t(ω) (FiBeR)", "fiber_ft", []setting{{"omega", 0.3}}, newFiberBound(slowFiber), 0.02},
		{"fiber_nfloor", "fiber_nfloor", nil, newFiberFloorBound(fiberH, noiseFloor, 1), 0},
		{"fiber_nfloor: floored at ε_v (FiBeR)", "fiber_nfloor", nil, newFiberBound(fiberH), 0.3},
		{"fiber_rfloor", "fiber_rfloor", nil, newFiberFloorBound(fiberH, relativeFloor, 0.25), 0},
		{"fiber_rfloor: floored at ε_v (FiBeR)", "fiber_rfloor", nil, newFiberBound(fiberH), 0.3},
		{"fiber_rfloor: the noise floor instead (fiber_nfloor)", "fiber_rfloor", nil, newFiberFloorBound(fiberH, noiseFloor, 0.25), 0.1},
		{"schedule_free", "schedule_free", nil, scheduleFreeBound{h: sf}, 0},
		{"schedule_free: uniform weights 1/(t+1) (Schedule-Free SGD's)", "schedule_free", nil, scheduleFreeBound{h: sf, uniform: true}, 0.3},
		{"ademamix", "ademamix", warmSets, adEMAMixBound{h: warm}, 0},
		{"ademamix: no scheduler", "ademamix", warmSets, adEMAMixBound{h: warm, schedule: flatSchedule}, 0.3},
		{"ademamix: beta3 interpolated linearly, not its half-life", "ademamix", warmSets, adEMAMixBound{h: warm, schedule: linearBeta3}, 0.3},
		{"doppler", "doppler", nil, newDopplerBound(dop), 0},
		{"doppler: a2 = 0.26 instead of 0.25", "doppler", nil, newDopplerBound(shiftedPole), 0.3},
		{"blt_sgd", "blt_sgd", nil, bltSGDBound{sgdm, blt}, 0},
		{"blt_sgd: independent noise (w = z)", "blt_sgd", nil, bltSGDBound{sgdm, white}, 0.3},
		{"blt_sgd: the weights' signs flipped", "blt_sgd", nil, bltSGDBound{sgdm, flipped}, 0.3},
		{"blt_adam", "blt_adam", nil, bltAdamBound{adamBound{adamW}, blt}, 0},
		{"blt_adam: independent noise (w = z)", "blt_adam", nil, bltAdamBound{adamBound{adamW}, white}, 0.3},
		{"blt_adam: the weights' signs flipped", "blt_adam", nil, bltAdamBound{adamBound{adamW}, flipped}, 0.3},
	} {
		c := oracleCase{opt: optimizerNamed(m.opt), stream: streams[0], sets: m.sets, seed: 7, n: 512}
		theta0, grads := c.inputs()
		stepwise, _ := missedShares(t, c, theta0, grads, m.b, c.stream.sigmaW2)
		t.Logf("%s: outside the bound on %.2f%% of the (coordinate, step) pairs", m.name, 100*stepwise)
		switch {
		case m.minStepwise == 0 && stepwise > 0:
			t.Errorf("%s: outside its own bound on %.3g%% of the pairs, want none", m.name, 100*stepwise)
		case stepwise < m.minStepwise:
			t.Errorf("%s: outside the bound on only %.2f%% of the pairs (want %.0f%%): the bound cannot tell this mistake from rounding",
				m.name, 100*stepwise, 100*m.minStepwise)
		}
	}
}
