package main

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/corrnoise"
	"github.com/fibergen/fibergen/explain"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
)

// bltDSL is a correlated-noise optimizer: a noise block of two buffers and
// a momentum whose attenuation is the joint system's.
var bltDSL = filepath.Join("..", "..", "tests", "testdata", "dsl", "blt.dsl")

// TestCorrelatedBackendsIdentical checks that the go, cpu and ptxsim
// backends agree bit for bit on θ and the states of the correlated-noise
// optimizers — the test's and the shipped ones, which the noise buffers
// reach through g at every step — in each noise mode (secure with one key
// for all three), at sizes around the groups of four and the octets the
// noise is drawn in, and past the host's wide loops.
func TestCorrelatedBackendsIdentical(t *testing.T) {
	key, err := rng.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bltDSL, optPath("blt_sgd"), optPath("blt_adam")} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			u := compileFile(path, &strings.Builder{})
			if u == nil {
				t.Fatalf("%s does not compile", path)
			}
			checkCorrelatedBackends(t, u, key)
		})
	}
}

// checkCorrelatedBackends runs u on every backend in every noise mode
// and compares θ and the states the runtime hands out.
func checkCorrelatedBackends(t *testing.T, u *pipeline.Unit, key rng.Key) {
	r := rand.New(rand.NewPCG(3, 4))
	const steps = 5
	names := append([]string{"theta"}, shownStates(u)...)
	for _, n := range []int{1, 3, 7, 9, 1029} {
		theta, grads := randFloats(r, n), randFloats(r, steps*n)
		for _, mode := range []rng.Mode{rng.Off, rng.Philox, rng.Secure} {
			want := runCorrelated(t, u, runtime.Go, mode, key, theta, grads)
			for _, b := range []runtime.Backend{runtime.CPU, runtime.PTXSim} {
				got := runCorrelated(t, u, b, mode, key, theta, grads)
				for k, name := range names {
					if d := floatbits.Diff(want[k], got[k]); d != "" {
						t.Errorf("n=%d %v: the %s backend's %s differs from the go backend's: %s", n, mode, b, name, d)
					}
				}
			}
		}
	}
}

// runCorrelated runs u on backend in noise mode (secure: under key) with
// σ_w² = 0.3 over copies of theta and the steps of grads, and returns θ
// and the states the runtime hands out.
func runCorrelated(t *testing.T, u *pipeline.Unit, backend runtime.Backend, mode rng.Mode, key rng.Key, theta, grads []float32) [][]float32 {
	t.Helper()
	opt, err := openUnit(u, runtime.Options{Backend: backend, SecureNoise: mode == rng.Secure})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	tn, err := opt.Register("theta", theta)
	if err == nil {
		err = opt.SetNoise(runtime.Noise{SigmaW2: 0.3, Draw: mode != rng.Off})
	}
	if err == nil && mode == rng.Secure {
		err = opt.SetKey(key)
	}
	if err == nil && mode == rng.Philox {
		err = opt.SetSeed(11)
	}
	for n, step := len(theta), 0; err == nil && (step+1)*n <= len(grads); step++ {
		if err = tn.SetGrad(grads[step*n : (step+1)*n]); err == nil {
			err = opt.Step()
		}
	}
	out, terr := tn.Params()
	bufs := [][]float32{out}
	for _, s := range shownStates(u) {
		buf, serr := tn.State(s)
		bufs, terr = append(bufs, buf), errors.Join(terr, serr)
	}
	if err = errors.Join(err, terr); err != nil {
		t.Fatal(err)
	}
	return bufs
}

// exists reports whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestCorrelatedRefusals checks what a correlated-noise optimizer refuses:
// writing out or handing out a noise buffer, a Poisson privacy budget
// (amplification by sampling is not claimed for correlated noise), a noise
// filter changed after the first step or differing per tensor.
func TestCorrelatedRefusals(t *testing.T) {
	dir := t.TempDir()
	th, g, out := runInputs(t, []float32{1, 2}, []float32{0.5, 0.5}, 1)
	s1 := filepath.Join(dir, "s1.npy")
	res := runMain("run", bltDSL, "--grads", g, "--theta", th, "--out", out, "--sigma-w2", "0.1", "--state-out", "s1="+s1)
	if res.code != 1 || !strings.Contains(res.stderr, "s1 is a noise buffer of blt_probe") || exists(out) || exists(s1) {
		t.Errorf("run --state-out s1=…: exit %d, stderr %q, want 1 and the buffer refused, nothing written", res.code, res.stderr)
	}
	u := compileFile(bltDSL, &strings.Builder{})
	opt, err := openUnit(u, runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	tn, err := opt.Register("theta", []float32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.State("s1"); err == nil || !strings.Contains(err.Error(), "noise buffer") {
		t.Errorf("Tensor.State(s1): %v, want the noise buffer refused", err)
	}
	_, err = opt.SetBudget(runtime.Budget{Epsilon: 4, ClipNorm: 1, Schedule: privacy.Schedule{DatasetSize: 1000, BatchSize: 10, Epochs: 2}})
	if _, set := opt.DP(); err == nil || !strings.Contains(err.Error(), "no amplification by sampling is claimed for correlated noise") || set {
		t.Errorf("a Poisson budget on a correlated-noise optimizer: %v (DP set: %v), want a refusal that says why, nothing set", err, set)
	}
	if err := tn.SetHypers(map[string]float64{"decay": 0.5}); err == nil || !strings.Contains(err.Error(), "one for all tensors") {
		t.Errorf("a tensor's decay: %v, want the per-tensor filter refused", err)
	}
	err = errors.Join(opt.SetNoise(runtime.Noise{SigmaW2: 0.1, Draw: true}), tn.SetGrad([]float32{0.5, 0.5}), opt.Step())
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.SetHypers(map[string]float64{"lr": 0.2}); err != nil {
		t.Errorf("lr after a step: %v, want it taken (the filter does not read it)", err)
	}
	if err := opt.SetHypers(map[string]float64{"decay": 0.5}); err == nil || !strings.Contains(err.Error(), "cannot change after the first step") {
		t.Errorf("decay after a step: %v, want the changed filter refused", err)
	}
}

// TestExplainAgreesWithDesigner compiles the noise block fibergen
// mechanism writes into an optimizer and checks that explain derives the
// designer's figures from it: the compiler's model of the block (its
// coefficients from the DSL's literals) against the designer's float32
// filter. The literals read back as the designer's float32 values, and
// the model holds their shortest decimals, so the two agree to float32's
// resolution of one literal, relatively.
func TestExplainAgreesWithDesigner(t *testing.T) {
	dir := t.TempDir()
	block := filepath.Join(dir, "block.dsl")
	r := mustRun(t, "mechanism", "--steps", "300", "--min-sep", "30", "--buffers", "2", "--out", block, "--json")
	var design mechanismReport
	if err := json.Unmarshal([]byte(r.stdout), &design); err != nil {
		t.Fatal(err)
	}
	noise, err := os.ReadFile(block)
	if err != nil {
		t.Fatal(err)
	}
	src := writeFile(t, dir, "designed.dsl", []byte("optimizer designed\nhyper lr = 0.1\n"+string(noise)+"step {\n\ttheta = theta - lr * g\n}\n"))
	var x struct {
		NoiseFilter explain.NoiseFilter `json:"noise_filter"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "explain", src, "--steps", "300", "--min-sep", "30", "--json").stdout), &x); err != nil {
		t.Fatal(err)
	}
	got, want := x.NoiseFilter.Loss, design.Loss
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"sensitivity", got.Sensitivity, want.Sensitivity}, {"max error", got.MaxError, want.MaxError}, {"mean error", got.MeanError, want.MeanError}} {
		if math.Abs(c.got-c.want) > 1e-6*c.want {
			t.Errorf("%s: explain %v, the designer %v", c.what, c.got, c.want)
		}
	}
	if !got.Exact || x.NoiseFilter.Participations != 10 {
		t.Errorf("explain: exact %v, %d participations; want exact and 10", got.Exact, x.NoiseFilter.Participations)
	}
	for _, args := range [][]string{{"--min-sep", "0"}, {"--steps", "0"}, {"--steps", "300", "--min-sep", "301"}} {
		if res := runMain(append([]string{"explain", src}, args...)...); res.code != 2 || !strings.Contains(res.stderr, args[len(args)-2]+" ") {
			t.Errorf("explain %v: exit %d, %q; want 2 and the flag named", args, res.code, res.stderr)
		}
	}
	if res := runMain("explain", optPath("dp_sgd"), "--steps", "10"); res.code != 2 || !strings.Contains(res.stderr, "has no noise block") {
		t.Errorf("explain dp_sgd --steps 10: exit %d, %q", res.code, res.stderr)
	}
}

// TestCorrelatedBudget sets a privacy budget of fixed batches on a
// correlated-noise optimizer and checks it against an independent
// computation: the strategy as the power-series inverse of the noise
// filter's coefficients, its sensitivity summed densely over the pattern
// 0, b, 2b, … (exact for the fixture's non-negative, non-increasing
// strategy), and the Gaussian mechanism's ε there. The filter is then
// fixed; a checkpoint carries the budget, and neither a white-noise
// optimizer nor a correlated-noise one with another filter takes it.
func TestCorrelatedBudget(t *testing.T) {
	u := compileFile(bltDSL, &strings.Builder{})
	schedule := privacy.Schedule{DatasetSize: 200, BatchSize: 10, Epochs: 3, Sampling: privacy.Cyclic}
	opt, tn := budgeted(t, u, schedule, nil)
	sigma, err := opt.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: schedule})
	if err != nil {
		t.Fatal(err)
	}
	strategy, err := corrnoise.Inverse(u.Func.NoiseCoefficients(u.Func.DefaultHypers(), 60))
	if err != nil {
		t.Fatal(err)
	}
	sens := denseSensitivity(strategy, 20)
	if eps := privacy.GaussianEpsilon(sens/sigma, privacy.DefaultDelta(200)); eps > 2 || eps < 2*(1-1e-5) {
		t.Errorf("σ %v spends ε %v by the dense sensitivity %v, want just below 2", sigma, eps, sens)
	}
	if err := opt.SetHypers(map[string]float64{"decay": 0.5}); err == nil || !strings.Contains(err.Error(), "under a privacy budget") {
		t.Errorf("decay under a budget: %v, want the changed filter refused", err)
	}
	var spent []float64
	for range 30 {
		if err := errors.Join(tn.SetGrad([]float32{0.5, 0.5}), opt.TrustClippedGradient(), opt.Step()); err != nil {
			t.Fatal(err)
		}
		g, _ := opt.Spent()
		spent = append(spent, g.Epsilon)
	}
	if !slices.IsSorted(spent) || spent[29] > 2 || spent[0] <= 0 {
		t.Errorf("ε spent over the steps: %v", spent)
	}
	ckpt := filepath.Join(t.TempDir(), "run.ckpt")
	if err := opt.Save(ckpt); err != nil {
		t.Fatal(err)
	}
	resumed, _ := budgeted(t, u, schedule, nil)
	if err := resumed.Load(ckpt); err != nil {
		t.Fatal(err)
	}
	if g, ok := resumed.Spent(); !ok || g.Epsilon != spent[29] {
		t.Errorf("resumed: spent %v, %v; want %v", g, ok, spent[29])
	}
	other, _ := budgeted(t, u, schedule, map[string]float64{"decay": 0.5})
	if err := other.Load(ckpt); err != nil {
		t.Errorf("into an optimizer at another filter, without a budget: %v; want the checkpoint's filter and budget taken", err)
	} else if g, _ := other.Spent(); g.Epsilon != spent[29] {
		t.Errorf("into an optimizer at another filter: spent %v, want %v", g.Epsilon, spent[29])
	}
	other, _ = budgeted(t, u, schedule, map[string]float64{"decay": 0.5})
	other.SetBudget(runtime.Budget{Epsilon: 2, ClipNorm: 1, Schedule: schedule}) // another filter: another σ
	if err := other.Load(ckpt); err == nil || !strings.Contains(err.Error(), "checkpoint's noise filter is not the one the optimizer's privacy budget was calibrated for") {
		t.Errorf("a budget's checkpoint into another filter's budget: %v; want the filter named as the cause", err)
	}
	white, _ := budgeted(t, compileFile(optPath("dp_sgd"), &strings.Builder{}), schedule, nil)
	if err := white.Load(ckpt); err == nil || !strings.Contains(err.Error(), "checkpoint of blt_probe, this optimizer is dp_sgd") {
		t.Errorf("a correlated-noise checkpoint into dp_sgd: %v", err)
	}
}

// budgeted opens u on the Go backend with a tensor of two coordinates,
// at hypers set.
func budgeted(t *testing.T, u *pipeline.Unit, s privacy.Schedule, set map[string]float64) (*runtime.Optimizer, *runtime.Tensor) {
	t.Helper()
	opt, err := openUnit(u, runtime.Options{Backend: runtime.Go, StateDir: t.TempDir()}) // a resume record of its own
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	tn, err := opt.Register("theta", []float32{1, 2})
	if err == nil && set != nil {
		err = opt.SetHypers(set)
	}
	if err == nil {
		err = opt.SetSeed(5)
	}
	if err != nil {
		t.Fatal(err)
	}
	return opt, tn
}

// denseSensitivity is ‖Σ_j C e_{jb}‖ for the lower-triangular Toeplitz
// matrix C of strategy, summed column by column.
func denseSensitivity(strategy []float64, b int) float64 {
	n := len(strategy)
	sum := make([]float64, n)
	for j := 0; j < n; j += b {
		for i := j; i < n; i++ {
			sum[i] += strategy[i-j]
		}
	}
	var s float64
	for _, x := range sum {
		s += x * x
	}
	return math.Sqrt(s)
}
