package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/runtime"
)

// small is the run CI trains: fiber from the checked-in manifest (in a clean
// clone generated/fiber has no fiber.so and the CPU backend runs the Go
// reference), 3200 training examples, 3 epochs of 25 steps.
func small(seed uint64) config {
	return config{
		Optimizer: filepath.Join("..", "..", "generated", "fiber"),
		Backend:   "cpu",
		N:         4000, D: 10, Batch: 128, Epochs: 3,
		Clip: 1, Sigma: 1, LR: 0.05, Sampling: "poisson",
		Seed: seed, SeedSet: true, DataSeed: seed,
	}
}

// TestLearns trains on a few data sets and noise seeds: the private model
// beats always predicting the majority class by a wide margin and comes
// close to the true weights.
func TestLearns(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		cfg := small(seed)
		var log bytes.Buffer
		cfg.Log = &log
		res, err := run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: test accuracy %.4f (true weights %.4f, majority %.4f), backend %s, σ_w %.4g",
			seed, res.TestAcc, res.TrueAcc, res.MajorityAcc, res.Backend, res.SigmaW)
		if res.TestAcc < res.MajorityAcc+0.15 || res.TestAcc < res.TrueAcc-0.08 {
			t.Errorf("seed %d: test accuracy %.4f, want at least the majority baseline %.4f + 0.15 and the true weights' %.4f - 0.08\n%s",
				seed, res.TestAcc, res.MajorityAcc, res.TrueAcc, log.String())
		}
		if res.Steps != 75 || len(res.Epochs) != 3 || res.Backend == "" {
			t.Errorf("seed %d: %d steps, %d epochs, backend %q; want 75, 3 and a backend", seed, res.Steps, len(res.Epochs), res.Backend)
		}
		if want := 1.0 / 128; math.Abs(res.SigmaW-want) > 1e-12 {
			t.Errorf("σ_w = %v, want σ_DP·C/B = %v", res.SigmaW, want)
		}
	}
}

// TestShuffleAndNoObservation trains with shuffled fixed-size batches, and
// with DP-AdamW, which declares no observation (fiber's two-point path is
// the one TestLearns takes).
func TestShuffleAndNoObservation(t *testing.T) {
	for _, c := range []struct{ name, optimizer, sampling string }{
		{"fiber/shuffle", "fiber", "shuffle"},
		{"dp_adamw/poisson", "dp_adamw", "poisson"},
	} {
		cfg := small(4)
		cfg.Optimizer = filepath.Join("..", "..", "generated", c.optimizer)
		cfg.Sampling = c.sampling
		res, err := run(cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.TestAcc < res.MajorityAcc+0.15 {
			t.Errorf("%s: test accuracy %.4f, majority baseline %.4f", c.name, res.TestAcc, res.MajorityAcc)
		}
	}
}

// TestSeeds: the same noise seed gives the same weights, bit for bit, on
// either CPU path; another seed gives other weights.
func TestSeeds(t *testing.T) {
	weights := func(seed uint64, backend string) []float32 {
		t.Helper()
		cfg := small(1)
		cfg.Seed, cfg.Backend, cfg.Epochs = seed, backend, 1
		res, err := run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return append(res.Weight, res.Bias)
	}
	a, b, c := weights(7, "cpu"), weights(7, "go"), weights(8, "cpu")
	if !floatbits.Equal(a, b) {
		t.Errorf("seed 7 gives different weights on cpu and go:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 give the same weights")
	}
}

// TestPrivatizedGradient checks one step's privatized gradient end to end,
// for fiber (two points; after two steps, so that the look-ahead point is
// not θ) and DP-AdamW (one set): what the runtime writes into the gradient
// buffer from the trainer's rows matches a float64 hand computation — each
// example's gradient at θ_t and at the runtime's look-ahead point, mixed
// with the observation's a, clipped to C, summed and divided by the
// expected batch size B, not by the k examples of the Poisson batch —
// within float32 rounding; and a first batch of no examples replaces the
// gradient by zero.
func TestPrivatizedGradient(t *testing.T) {
	for _, name := range []string{"fiber", "dp_adamw"} {
		t.Run(name, func(t *testing.T) {
			cfg := small(5)
			cfg.Optimizer, cfg.Clip = filepath.Join("..", "..", "generated", name), 0.7
			tr, err := newTrainer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.o.Close()
			if err := tr.wT.SetGrad(slices.Repeat([]float32{0.5}, cfg.D)); err != nil {
				t.Fatal(err)
			}
			if err := tr.privatize(); err != nil { // no examples yet, nil rows
				t.Fatal(err)
			}
			if g := gradient(t, tr); slices.ContainsFunc(g, func(x float32) bool { return x != 0 }) {
				t.Errorf("no examples: gradient %v, want 0", g)
			}
			for k := range 3 {
				tr.idx = tr.smp.batch(tr.idx, k)
				if k < 2 {
					if err := tr.step(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(tr.idx) == cfg.Batch {
				t.Fatalf("the batch holds B = %d examples: pick a seed whose Poisson batch does not", cfg.Batch)
			}
			want, bound := handPrivatized(t, tr)
			if err := tr.privatize(); err != nil {
				t.Fatal(err)
			}
			got, worst := gradient(t, tr), 0.0
			for i := range want {
				d := math.Abs(float64(got[i]) - want[i])
				if !(d <= bound[i]) {
					t.Errorf("coordinate %d: %v, by hand %v (|difference| %.3g > bound %.3g)", i, got[i], want[i], d, bound[i])
				}
				worst = max(worst, d/bound[i])
			}
			t.Logf("k = %d examples, B = %d: worst |difference| / bound %.3g", len(tr.idx), cfg.Batch, worst)
		})
	}
}

// handPrivatized computes in float64 the privatized gradient of the batch
// tr.idx at the optimizer's parameters and look-ahead point, and a bound on
// how far the kernels' float32 result may be from it: (k + 32)·2^-24 of
// Σ_ξ scale_ξ·(|a·look_ξ| + |(1−a)·cur_ξ|)/B per coordinate — the rows
// rounded to float32, the mix, the clipping scale, a sum of k terms and
// the division, each a few roundings, with room. It checks that the
// clipping is active on some examples and not on others.
func handPrivatized(t *testing.T, tr *trainer) (want, bound []float64) {
	t.Helper()
	theta, look := make(model, tr.cfg.D+1), model(nil)
	if err := readModel(theta, (*runtime.Tensor).Params, tr.wT, tr.bT); err != nil {
		t.Fatal(err)
	}
	obs := tr.o.Observation()
	if obs.Kind == "two_point" {
		look = make(model, len(theta))
		if err := readModel(look, (*runtime.Tensor).Lookahead, tr.wT, tr.bT); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(look, theta) {
			t.Fatal("the look-ahead point is θ: the test checks too little")
		}
	}
	want, bound = make([]float64, len(theta)), make([]float64, len(theta))
	clipped := 0
	for _, i := range tr.idx {
		x, y := tr.ds.trainX[i], tr.ds.trainY[i]
		c := sigmoid(theta.logit(x)) - y
		mix, mag := c, math.Abs(c)
		if look != nil {
			l := sigmoid(look.logit(x)) - y
			mix, mag = obs.A*l+(1-obs.A)*c, math.Abs(obs.A*l)+math.Abs((1-obs.A)*c)
		}
		u := append(append([]float64(nil), x...), 1) // the row is mix·[x, 1]
		s := math.Min(1, tr.cfg.Clip/(math.Abs(mix)*norm(u)))
		if s < 1 {
			clipped++
		}
		for j, xj := range u {
			want[j] += s * mix * xj
			bound[j] += s * mag * math.Abs(xj)
		}
	}
	if clipped == 0 || clipped == len(tr.idx) {
		t.Fatalf("%d of %d examples clipped: the test checks too little", clipped, len(tr.idx))
	}
	B, k := float64(tr.cfg.Batch), float64(len(tr.idx))
	for j := range want {
		want[j] /= B
		bound[j] = (k+32)*0x1p-24*bound[j]/B + (k+4)*0x1p-149
	}
	return want, bound
}

// gradient returns the gradient buffer of the weight and bias tensors.
func gradient(t *testing.T, tr *trainer) []float32 {
	t.Helper()
	w, err := tr.wT.Grad()
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.bT.Grad()
	if err != nil {
		t.Fatal(err)
	}
	return append(w, b...)
}

// TestCLIErrors: misuse exits non-zero with one line that says what to do.
func TestCLIErrors(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"-optimizer", filepath.Join(t.TempDir(), "fiber")}, 1, "make build"},
		{[]string{"-optimizer", t.TempDir()}, 1, "is not a generated optimizer"},
		{[]string{"-nope"}, 2, "flag provided but not defined"},
		{[]string{"-batch", "0"}, 2, "-batch 0"},
		{[]string{"-sampling", "fixed"}, 2, "poisson or shuffle"},
		{[]string{"-backend", "tpu"}, 2, "cpu, go or cuda"},
		{[]string{"-sigma", "-1"}, 2, "-sigma -1"},
		{[]string{"-n", "100", "-batch", "100"}, 2, "-n 100"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"-optimizer", filepath.Join("..", "..", "generated", "fiber"), "-set", "omega=3", "-epochs", "1"}, 1, "omega"},
	} {
		var stdout, stderr bytes.Buffer
		status := cli(c.args, &stdout, &stderr)
		msg := stderr.String()
		if status != c.status || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, status, msg, c.status, c.want)
		}
	}
}

// TestFindOptimizer: the default relative path resolves from a
// subdirectory of the module, through the module root.
func TestFindOptimizer(t *testing.T) {
	dir, err := findOptimizer(filepath.Join("generated", "fiber"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fiber.json")); err != nil {
		t.Errorf("resolved to %s: %v", dir, err)
	}
}

// TestCLI runs the command as a user would, on a small size: it prints the
// setup, one line per epoch, the backend that ran, σ_w, the steps and the
// baselines.
func TestCLI(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-optimizer", filepath.Join("..", "..", "generated", "fiber"),
		"-n", "4000", "-d", "10", "-batch", "128", "-epochs", "2", "-seed", "3"}
	if status := cli(args, &stdout, &stderr); status != 0 {
		t.Fatalf("exit %d: %s", status, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"backend: ", "σ_w = σ_DP·C/B = 0.007812", "noise seed 3\n", "epoch 1/2: train loss ",
		"epoch 2/2: ", "done: 50 steps on backend ", "baselines: the true weights "} {
		if !strings.Contains(out, want) {
			t.Errorf("the output has no %q:\n%s", want, out)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}
