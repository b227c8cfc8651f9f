package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
	if !slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
		t.Errorf("seed 7 gives different weights on cpu and go:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 give the same weights")
	}
}

// TestClip: a vector longer than C is scaled to norm C (to float64
// rounding) in its own direction, a shorter one and the zero vector are
// unchanged, and clip reports the norm before clipping.
func TestClip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 1000 {
		c := math.Exp(4 * (r.Float64() - 0.5))
		v := make([]float64, 1+r.IntN(30))
		for i := range v {
			v[i] = r.NormFloat64() * math.Exp(6*(r.Float64()-0.5))
		}
		orig := slices.Clone(v)
		n := clip(v, c)
		if n != norm(orig) {
			t.Fatalf("clip returned %v, the norm is %v", n, norm(orig))
		}
		if n <= c {
			if !slices.Equal(v, orig) {
				t.Fatalf("norm %v <= C = %v, but clip changed the vector", n, c)
			}
			continue
		}
		if got := norm(v); math.Abs(got-c) > 1e-12*c {
			t.Fatalf("norm %v > C = %v clipped to norm %v", n, c, got)
		}
		for i := range v {
			if math.Abs(v[i]-orig[i]*c/n) > 1e-12*math.Abs(orig[i]) {
				t.Fatalf("clipping changed the direction: %v -> %v", orig, v)
			}
		}
	}
	zero := make([]float64, 5)
	if n := clip(zero, 1); n != 0 || slices.ContainsFunc(zero, func(x float64) bool { return x != 0 }) {
		t.Errorf("the zero vector: norm %v, clipped to %v", n, zero)
	}
}

// TestClippedGradients: every example's vector, as the trainer forms it
// (with and without the two-point observation) and clips it, has norm at
// most C, and the clip is active on part of the data at C = 0.5.
func TestClippedGradients(t *testing.T) {
	ds := makeData(2000, 10, 3)
	r := rand.New(rand.NewPCG(3, 3))
	theta, prev := make(model, 11), make(model, 11)
	for i := range theta {
		theta[i], prev[i] = r.NormFloat64(), r.NormFloat64()
	}
	look := make(model, 11)
	for j := range look {
		look[j] = theta[j] + 0.7*(theta[j]-prev[j])
	}
	u := make([]float64, 11)
	for _, c := range []float64{0.5, 1} {
		for _, lk := range []model{nil, look} {
			clipped := 0
			for i, x := range ds.trainX {
				exampleGrad(u, theta, lk, 0.95, x, ds.trainY[i])
				if clip(u, c) > c {
					clipped++
				}
				if n := norm(u); n > c*(1+1e-12) {
					t.Fatalf("C = %v: example %d's clipped vector has norm %v", c, i, n)
				}
			}
			if c == 0.5 && clipped == 0 {
				t.Error("C = 0.5: no example was clipped; the test checks nothing")
			}
		}
	}
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
