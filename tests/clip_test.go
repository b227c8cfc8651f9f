package tests

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/generated/disk"
	"github.com/fibergen/fibergen/generated/dp_sgd"
	"github.com/fibergen/fibergen/tests/oracle"
)

// clipCase is a hand-made privatization with a known answer.
type clipCase struct {
	name      string
	cur, look [][]float64 // per example; look nil: one set
	a, c      float64
	b         float64   // the divisor, the expected batch size; 0: len(cur)
	want      []float64 // the clipped sum over the divisor
}

// divisor is the batch size the case divides by.
func (c clipCase) divisor() float64 {
	if c.b == 0 {
		return float64(len(c.cur))
	}
	return c.b
}

// sparse returns a vector of n zeros with the given entries set.
func sparse(n int, at map[int]float64) []float64 {
	x := make([]float64, n)
	for i, v := range at {
		x[i] = v
	}
	return x
}

// clipCases are 3-4-5 triangles above, below and at the clipping norm,
// zero examples, B = 1, two-point mixes, a triangle whose legs lie in
// different chunks of the norms reduction, and Poisson batches of k
// examples over the expected B: none, fewer and more.
var clipCases = []clipCase{
	{name: "B=1 above C", cur: [][]float64{{3, 4}}, c: 1, want: []float64{0.6, 0.8}},
	{name: "B=1 below C", cur: [][]float64{{0.3, 0.4}}, c: 1, want: []float64{0.3, 0.4}},
	{name: "B=1 at C", cur: [][]float64{{3, 4}}, c: 5, want: []float64{3, 4}},
	{name: "zero example", cur: [][]float64{{3, 4}, {0, 0}}, c: 1, want: []float64{0.3, 0.4}},
	{name: "all zero", cur: [][]float64{{0, 0, 0}, {0, 0, 0}}, c: 1, want: []float64{0, 0, 0}},
	{name: "above and below", cur: [][]float64{{6, 8}, {0.3, 0.4}, {0, 0}}, c: 2, want: []float64{0.5, 2.0 / 3}},
	{name: "signs", cur: [][]float64{{-3, 4}, {3, -4}}, c: 1, want: []float64{0, 0}},
	{name: "mix a=1/2", cur: [][]float64{{0, 8}}, look: [][]float64{{6, 0}}, a: 0.5, c: 1, want: []float64{0.6, 0.8}},
	{name: "mix a=1/4", cur: [][]float64{{0, 16}, {0, 0}}, look: [][]float64{{12, -48}, {0, 0}}, a: 0.25, c: 2.5, want: []float64{1.25, 0}},
	{name: "mix below C", cur: [][]float64{{1, 1}}, look: [][]float64{{-1, 3}}, a: 0.5, c: 10, want: []float64{0, 2}},
	{name: "legs in two chunks", cur: [][]float64{sparse(3*4096+129, map[int]float64{5: 3, 3*4096 + 100: 4})}, c: 1,
		want: sparse(3*4096+129, map[int]float64{5: 0.6, 3*4096 + 100: 0.8})},
	{name: "k=2 of B=4", cur: [][]float64{{3, 4}, {0.3, 0.4}}, c: 1, b: 4, want: []float64{0.225, 0.3}},
	{name: "k=3 of B=2", cur: [][]float64{{6, 8}, {0.3, 0.4}, {0, 0}}, c: 2, b: 2, want: []float64{0.75, 1}},
	{name: "k=0 of B=5", cur: [][]float64{}, c: 1, b: 5, want: []float64{0, 0, 0}},
	{name: "mix k=1 of B=2", cur: [][]float64{{0, 8}}, look: [][]float64{{6, 0}}, a: 0.5, c: 1, b: 2, want: []float64{0.3, 0.4}},
}

// TestClipOracle checks the oracle's clipped mean on the hand-made cases:
// the answers are exact up to float64 rounding.
func TestClipOracle(t *testing.T) {
	for _, c := range clipCases {
		got := oracle.ClippedMean(c.cur, c.look, len(c.want), c.a, c.c, c.divisor())
		for i := range c.want {
			if math.Abs(got[i]-c.want[i]) > 4*u64*math.Abs(c.want[i]) {
				t.Errorf("%s: coordinate %d = %.17g, want %.17g", c.name, i, got[i], c.want[i])
			}
		}
	}
}

// TestClipGenerated checks the generated packages' Privatize on the
// hand-made cases against the known answers within privatizeBound.
func TestClipGenerated(t *testing.T) {
	for _, c := range clipCases {
		cur, look := flatRows(c.cur), flatRows(c.look)
		out := make([]float32, len(c.want))
		privatize := disk.Privatize
		if look == nil {
			privatize = dp_sgd.Privatize
		}
		if bad := privatize(out, cur, look, len(c.cur), float32(c.divisor()), c.a, c.c); bad >= 0 {
			t.Fatalf("%s: example %d not finite", c.name, bad)
		}
		bound := privatizeBound(c.cur, c.look, len(c.want), c.a, c.c, c.divisor())
		for i := range c.want {
			if d := math.Abs(float64(out[i]) - c.want[i]); !within(d, bound[i]) {
				t.Errorf("%s: coordinate %d = %.9g, want %.17g (|difference| %.3g > bound %.3g)", c.name, i, out[i], c.want[i], d, bound[i])
			}
		}
	}
}

// TestClipScalesGhost checks the generated ghost-clipping scales against
// the oracle's mixed norm on 3-4-5 triangles: ‖look‖ = 6 and ‖cur‖ = 8 at
// right angles mixed half and half have norm 5; parallel, 7.
func TestClipScalesGhost(t *testing.T) {
	for _, c := range []struct {
		look, cur, dot, a, want float64
	}{{6, 8, 0, 0.5, 0.2}, {6, 8, 48, 0.5, 1.0 / 7}, {0, 5, 0, 0, 0.2}, {0.3, 0.4, 0, 0.5, 1}, {0, 0, 0, 0.5, 1}} {
		norm := oracle.MixedNorm(c.look, c.cur, c.dot, c.a)
		if want := oracle.ClipScale(norm, 1); math.Abs(want-c.want) > 4*u64*c.want {
			t.Errorf("oracle: %+v: scale %v", c, want)
		}
		got := make([]float32, 1)
		if bad := disk.ClipScales(got, []float64{c.look}, []float64{c.cur}, []float64{c.dot}, c.a, 1); bad >= 0 || got[0] != float32(c.want) {
			t.Errorf("ClipScales %+v = %v (bad %d), want %v", c, got[0], bad, float32(c.want))
		}
	}
}

// flatRows concatenates rows into the kernels' float32 [B][n] layout; nil
// stays nil.
func flatRows(rows [][]float64) []float32 {
	if rows == nil {
		return nil
	}
	var out []float32
	for _, r := range rows {
		for _, x := range r {
			out = append(out, float32(x))
		}
	}
	return out
}

// privatizeBound bounds, per coordinate, how far the float32 clipped sum
// over the divisor b of the kernels can be from the oracle's, both computed
// from the float32 inputs (k = len(cur) examples of n coordinates). To first order in the unit roundoff u (uOp: the float32
// rounding plus the oracle's float64 ones): u = a·look + b·cur is off by
// 3u relative to |a·look| + |b·cur| (a and b rounded, two products, one
// sum); the squared norm by (k + 5 + 1 + 6)u relative, k ≤ 128 the terms of
// one lane of a chunk, 5 the tree, 1 the square, 6 twice u's error (the
// float64 sum of the partials adds nothing at this order); the scale
// C/sqrt(norm²) by half that plus sqrt, division and the float32
// conversion; each term scale·u by those plus its product; the sum over k
// examples by γ_k of Σ|terms|, and the division by b one more u.
func privatizeBound(cur, look [][]float64, n int, a, c, b float64) []float64 {
	rows := len(cur)
	lane := min(n, 4096) / 32
	scaleErr := float64(lane+5+1+6)/2 + 3
	factor := float64(rows) + 1 + 3 + 1 + scaleErr
	bound := make([]float64, n)
	for ex := range cur {
		var l []float64
		if look != nil {
			l = look[ex]
		}
		s := oracle.ClipScale(oracle.Norm(oracle.Mix(cur[ex], l, a)), c)
		for i := range bound {
			mag := math.Abs(cur[ex][i])
			if l != nil {
				mag = math.Abs(a*l[i]) + math.Abs((1-a)*cur[ex][i])
			}
			bound[i] += s * mag
		}
	}
	for i := range bound {
		bound[i] = uOp*factor*bound[i]/b + float64(rows+4)*tiny
	}
	return bound
}

// TestDiSKPrivatizedOracle runs DiSK end to end: every step, per-example
// gradients at θ_t and at the look-ahead point of k examples, k running
// through 0 … 2B as Poisson sampling might draw them, mixed with the step's
// a, clipped, summed and divided by B by the generated package's Privatize
// and by the oracle (within privatizeBound), plus Gaussian noise w the
// test draws,
// then the generated step (its own noise off) against the DiSK oracle's
// EMA and AdamW restarted from the package's state before every step
// (within the rounding bound of bound_test.go).
func TestDiSKPrivatizedOracle(t *testing.T) {
	const batch, n, steps, clip, sigma = 8, 5000, 40, 1.0, 1.1
	opt := optimizerNamed("disk")
	c := oracleCase{opt: opt, n: n}
	impl, err := opt.newImpl(nil, n)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2026, 3))
	theta := initialTheta(r, n)
	tracker := c.newTracker(t, "stepwise", theta)
	privCheck := &boundCheck{what: "privatized gradient"}
	clipped, examples := 0, 0
	for s := range steps {
		a, _ := disk.Observation(disk.Defaults(), s)
		k := s * 5 % (2*batch + 1) // every k in [0, 2B] within 2B+1 steps
		cur, look := exampleGradients(r, k, n), exampleGradients(r, k, n)
		cur32, look32 := flatRows(cur), flatRows(look)
		g := make([]float32, n)
		if bad := disk.Privatize(g, cur32, look32, k, batch, a, clip); bad >= 0 {
			t.Fatalf("step %d: example %d not finite", s, bad)
		}
		cur, look = reread(cur32, k, n), reread(look32, k, n)
		want := oracle.ClippedMean(cur, look, n, a, clip, batch)
		bound := privatizeBound(cur, look, n, a, clip, batch)
		evs := make([]ev, n)
		for i := range evs {
			evs[i] = ev{x: want[i], e: bound[i], lo: negInf}
		}
		privCheck.check(s, "g", g, evs)
		for ex := range k {
			if oracle.Norm(oracle.Mix(cur[ex], look[ex], a)) > clip {
				clipped++
			}
		}
		examples += k
		for i := range g { // the noise, added in float32 as the step kernel does
			g[i] = g[i] + float32(sigma*clip/batch*r.NormFloat64())
		}
		tracker.restart(s, theta, impl.States())
		tracker.step(s, 0, to64(g))
		if err := impl.Update(theta, g, 0); err != nil {
			t.Fatal(err)
		}
		tracker.compare(t, s, opt.states, theta, impl.States())
	}
	privCheck.report(t)
	tracker.check.report(t)
	if clipped == 0 || clipped == examples || slices.Equal(theta, initialTheta(rand.New(rand.NewPCG(2026, 3)), n)) {
		t.Errorf("%d of %d examples clipped, θ moved: the run tests too little", clipped, examples)
	}
}

// exampleGradients draws batch per-example gradients of n coordinates: a
// shared direction plus per-example noise, at norms from 0.1 to 10 around
// the clipping norm 1; one example in eight is zero.
func exampleGradients(r *rand.Rand, batch, n int) [][]float64 {
	rows := make([][]float64, batch)
	for ex := range rows {
		rows[ex] = make([]float64, n)
		if ex%8 == 7 {
			continue
		}
		scale := math.Pow(10, 2*r.Float64()-1) / math.Sqrt(float64(n))
		for i := range rows[ex] {
			rows[ex][i] = scale * (math.Sin(float64(i)) + r.NormFloat64())
		}
	}
	return rows
}

// reread returns the k float32 rows of n as float64, the inputs both sides
// share.
func reread(flat []float32, k, n int) [][]float64 {
	rows := make([][]float64, k)
	for ex := range rows {
		rows[ex] = to64(flat[ex*n : (ex+1)*n])
	}
	return rows
}
