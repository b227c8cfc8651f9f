// Command logreg trains logistic regression with differential privacy
// through a generated fibergen optimizer, end to end: it generates a
// synthetic binary classification data set, samples batches, computes every
// example's gradient by hand — at θ_t and, for a two-point optimizer, at the
// look-ahead point the runtime keeps (Tensor.Lookahead) — and hands the
// rows to the runtime's Privatize, whose kernels mix each example's two
// gradients as the observation says, clip it to norm C over all the
// parameters (weight and bias together) and divide the sum by B; the
// optimizer's step kernel then adds the Gaussian noise and takes the step.
//
// From the repository root, after `make build`:
//
//	go run ./examples/logreg -epochs 5
//
// The batches are Poisson-sampled by default (every training example joins
// each batch independently with probability B/N_train, the sampling that
// DP-SGD's accountants analyse: the trainer passes the k examples drawn and
// the runtime divides the clipped sum by the expected batch size B);
// -sampling shuffle takes fixed-size batches of B from a fresh permutation
// every epoch instead.
//
// Only the trained weights are differentially private: the per-epoch train
// loss and test accuracy it prints are diagnostics computed from the data
// without noise.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// The data set's fixed shape: the standard deviation of the true logit
// w*·x, the true bias, the fraction of labels flipped, and the share held
// out for testing.
const (
	trueScale  = 4.0
	trueBias   = 0.5
	labelNoise = 0.05
	testShare  = 0.2
)

// config is one training run.
type config struct {
	Optimizer string   // the generated optimizer's directory (holds <name>.json)
	Backend   string   // cpu, go or cuda
	N, D      int      // examples (train and test together), features
	Batch     int      // B: the (expected) batch size
	Epochs    int      // passes over the training set
	Clip      float64  // C: the per-example clipping norm
	Sigma     float64  // σ_DP: the noise multiplier
	LR        float64  // the optimizer's lr hyper; 0 keeps its default
	Set       []string // further hypers, name=value
	Sampling  string   // poisson or shuffle
	Seed      uint64   // the noise and batch-sampling seed, if SeedSet
	SeedSet   bool     // false: a random seed (reported in result.Seed)
	DataSeed  uint64   // the data set
	Log       io.Writer
}

// epochStats is what the trainer reports after each epoch.
type epochStats struct {
	TrainLoss float64 // mean logistic loss over the training set
	TestAcc   float64
}

// result is a finished run.
type result struct {
	Optimizer   string          // its name
	Backend     runtime.Backend // where the steps ran (cpu falls back to go without <name>.so)
	Seed        uint64          // the noise and batch-sampling seed
	Steps       int
	SigmaW      float64 // the noise std per coordinate, σ_DP·C/B
	Epochs      []epochStats
	TestAcc     float64           // the trained model's
	TrueAcc     float64           // the true weights' (the best one can expect)
	TrueLoss    float64           // the true weights' train loss
	MajorityAcc float64           // always predicting the training set's majority class
	Privacy     privacy.Guarantee // (ε, δ) spent, Poisson sampling; zero for shuffled batches
	Weight      []float32
	Bias        float32
}

// dataset is a synthetic binary classification problem: x ~ N(0, I_d/d)
// (features scaled so that |x| is about 1, as one scales features for
// DP training so that per-example gradients are of the order of C),
// y ~ Bernoulli(sigmoid(w*·x + b*)) with w*·x of standard deviation
// trueScale, then a share labelNoise of the labels flipped.
type dataset struct {
	d             int
	trueW         []float64
	trueB         float64
	trainX, testX [][]float64
	trainY, testY []float64
}

func makeData(n, d int, seed uint64) *dataset {
	r := rand.New(rand.NewPCG(seed, 0x6c6f67726567)) // "logreg"
	w := make([]float64, d)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	scale(w, trueScale*math.Sqrt(float64(d))/norm(w))
	ds := &dataset{d: d, trueW: w, trueB: trueBias}
	nTest := max(1, int(math.Round(testShare*float64(n))))
	for i := range n {
		x := make([]float64, d)
		for j := range x {
			x[j] = r.NormFloat64() / math.Sqrt(float64(d))
		}
		y := 0.0
		if r.Float64() < sigmoid(dot(w, x)+trueBias) {
			y = 1
		}
		if r.Float64() < labelNoise {
			y = 1 - y
		}
		if i < n-nTest {
			ds.trainX, ds.trainY = append(ds.trainX, x), append(ds.trainY, y)
		} else {
			ds.testX, ds.testY = append(ds.testX, x), append(ds.testY, y)
		}
	}
	return ds
}

// model is logistic regression's parameters in float64: the weights, then
// the bias, the order of the registered tensors and of the gradient rows.
type model []float64

func (m model) logit(x []float64) float64 { return dot(m[:len(x)], x) + m[len(x)] }

// accuracy is the share of examples that m classifies right (logit > 0: 1).
func (m model) accuracy(xs [][]float64, ys []float64) float64 {
	right := 0
	for i, x := range xs {
		if (m.logit(x) > 0) == (ys[i] == 1) {
			right++
		}
	}
	return float64(right) / float64(len(xs))
}

// loss is the mean logistic loss, log(1 + e^z) - y·z.
func (m model) loss(xs [][]float64, ys []float64) float64 {
	s := 0.0
	for i, x := range xs {
		z := m.logit(x)
		s += softplus(z) - ys[i]*z
	}
	return s / float64(len(xs))
}

// appendGrads appends to dst the gradient of the logistic loss at theta of
// each example idx names, one row of d+1 float32 per example:
// (sigmoid(z) − y)·[x, 1], the weight's coordinates then the bias's, the
// order of the registered tensors.
func (ds *dataset) appendGrads(dst []float32, theta model, idx []int) []float32 {
	for _, i := range idx {
		x := ds.trainX[i]
		c := sigmoid(theta.logit(x)) - ds.trainY[i]
		for _, xj := range x {
			dst = append(dst, float32(c*xj))
		}
		dst = append(dst, float32(c))
	}
	return dst
}

// sampler draws the indexes of each step's batch.
type sampler struct {
	r       *rand.Rand
	n, b    int
	poisson bool
	perm    []int // shuffle: this epoch's permutation
}

// stepsPerEpoch is N_train/B, rounded down for shuffled batches (the
// remainder is dropped so every batch holds exactly B) and to the nearest
// for Poisson sampling (expected batch size B).
func (s *sampler) stepsPerEpoch() int {
	if s.poisson {
		return max(1, int(math.Round(float64(s.n)/float64(s.b))))
	}
	return s.n / s.b
}

// batch returns the examples of step k of the epoch (k from 0), appended
// to dst[:0].
func (s *sampler) batch(dst []int, k int) []int {
	dst = dst[:0]
	if s.poisson {
		q := float64(s.b) / float64(s.n)
		for i := range s.n {
			if s.r.Float64() < q {
				dst = append(dst, i)
			}
		}
		return dst
	}
	if k == 0 {
		s.perm = s.r.Perm(s.n)
	}
	return append(dst, s.perm[k*s.b:(k+1)*s.b]...)
}

// spent is the (ε, δ) that steps Poisson-sampled steps at rate B/N with
// noise multiplier cfg.Sigma spend, δ = 1/N^1.1 (package privacy).
func spent(n int, cfg config, steps int) (privacy.Guarantee, error) {
	p := privacy.Plan{Sampling: privacy.Poisson, SampleRate: float64(cfg.Batch) / float64(n), Steps: steps, Delta: privacy.DefaultDelta(n)}
	acc, err := p.Accountant(cfg.Sigma)
	if err != nil {
		return privacy.Guarantee{}, err
	}
	return acc.EpsilonAfter(steps), nil
}

// run trains one model as cfg says.
func run(cfg config) (*result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	tr, err := newTrainer(cfg)
	if err != nil {
		return nil, err
	}
	defer tr.o.Close()
	res := tr.start()
	for e := range cfg.Epochs {
		if err := tr.epoch(res); err != nil {
			return nil, err
		}
		st := res.Epochs[e]
		tr.logf("epoch %*d/%d: train loss %.4f, test accuracy %.4f\n", len(fmt.Sprint(cfg.Epochs)), e+1, cfg.Epochs, st.TrainLoss, st.TestAcc)
	}
	return tr.finish(res)
}

// trainer is one training run: the optimizer with the model's two tensors,
// the data, the batch sampler and the buffers of the gradient computation.
type trainer struct {
	cfg         config
	o           *runtime.Optimizer
	dir, lrNote string
	ds          *dataset
	wT, bT      *runtime.Tensor
	smp         *sampler
	theta, look model     // the parameters and the look-ahead point, in float64
	cur, lk     []float32 // the batch's gradient rows at theta and at look, [k][d+1]
	idx         []int     // the batch: k training examples
}

func (tr *trainer) logf(format string, args ...any) {
	if tr.cfg.Log != nil {
		fmt.Fprintf(tr.cfg.Log, format, args...)
	}
}

// newTrainer opens and configures the optimizer and registers the model.
func newTrainer(cfg config) (*trainer, error) {
	dir, err := findOptimizer(cfg.Optimizer)
	if err != nil {
		return nil, err
	}
	// -backend cpu runs the host kernel where fibergen build made it, and
	// says so when it runs the reference instead (describeBackend).
	o, err := runtime.Open(dir, runtime.Options{Backend: runtime.Backend(cfg.Backend), GoFallback: true})
	if err != nil {
		return nil, err
	}
	tr := &trainer{cfg: cfg, o: o, dir: dir, ds: makeData(cfg.N, cfg.D, cfg.DataSeed)}
	if err := tr.configure(); err != nil {
		o.Close()
		return nil, err
	}
	if err := tr.register(); err != nil {
		o.Close()
		return nil, err
	}
	tr.theta, tr.look = make(model, cfg.D+1), make(model, cfg.D+1)
	tr.smp = &sampler{r: rand.New(rand.NewPCG(o.Seed(), 0x62617463686573)), // "batches"
		n: len(tr.ds.trainX), b: cfg.Batch, poisson: cfg.Sampling == "poisson"}
	return tr, nil
}

// configure sets the hypers, the DP settings and the seed.
func (tr *trainer) configure() error {
	cfg, o := tr.cfg, tr.o
	if cfg.LR > 0 {
		if _, err := o.Hyper("lr"); err != nil {
			tr.lrNote = fmt.Sprintf(" (%s has no hyper lr: -lr ignored)", o.Name())
		} else if err := o.SetHyper("lr", cfg.LR); err != nil {
			return err
		}
	}
	for _, s := range cfg.Set {
		name, value, err := lang.ParseSetting(s)
		if err != nil {
			return err
		}
		if err := o.SetHyper(name, value); err != nil {
			return err
		}
	}
	if err := o.SetDP(runtime.DP{ClipNorm: cfg.Clip, NoiseMultiplier: cfg.Sigma, BatchSize: cfg.Batch}); err != nil {
		return err
	}
	if cfg.SeedSet {
		if err := o.SetSeed(cfg.Seed); err != nil {
			return err
		}
	}
	if obs := o.Observation(); obs.Kind != "" && obs.Kind != "two_point" {
		return fmt.Errorf("%s observes %s; this trainer knows only two_point", o.Name(), obs.Kind)
	}
	return nil
}

// register adds the weight and bias tensors, zero (a public start), and
// starts the backend, so that a backend that cannot run fails before
// training and the log can say which one runs: a zero gradient, which the
// first step's overwrites.
func (tr *trainer) register() error {
	var err error
	if tr.wT, err = tr.o.Register("weight", make([]float32, tr.cfg.D)); err != nil {
		return err
	}
	if tr.bT, err = tr.o.Register("bias", []float32{0}); err != nil {
		return err
	}
	if err := tr.wT.SetGrad(make([]float32, tr.cfg.D)); err != nil {
		return fmt.Errorf("-backend %s: %w", tr.cfg.Backend, err)
	}
	return nil
}

// start logs the setting and returns the result to fill.
func (tr *trainer) start() *result {
	cfg, o, ds := tr.cfg, tr.o, tr.ds
	dp := runtime.DP{ClipNorm: cfg.Clip, NoiseMultiplier: cfg.Sigma, BatchSize: cfg.Batch}
	res := &result{Optimizer: o.Name(), Backend: o.Backend(), Seed: o.Seed(), SigmaW: math.Sqrt(dp.SigmaW2())}
	tr.logf("data: %d training and %d test examples, %d features, data seed %d\n", len(ds.trainX), len(ds.testX), cfg.D, cfg.DataSeed)
	tr.logf("optimizer: %s from %s", o.Name(), tr.dir)
	if lr, err := o.Hyper("lr"); err == nil {
		tr.logf(", lr %g", lr)
	}
	tr.logf("%s", tr.lrNote)
	if obs := o.Observation(); obs.Kind == "two_point" {
		tr.logf(", two-point observation (a = %.4g, lookahead = %.4g)", obs.A, obs.Lookahead)
	}
	tr.logf("\nbackend: %s\n", describeBackend(o, tr.dir, cfg.Backend))
	sampling := fmt.Sprintf("Poisson sampling at rate %.4g", float64(cfg.Batch)/float64(len(ds.trainX)))
	if !tr.smp.poisson {
		sampling = "shuffled fixed-size batches"
	}
	seedNote := ""
	if !cfg.SeedSet {
		seedNote = fmt.Sprintf(" (random; -seed %d repeats the run)", res.Seed)
	}
	tr.logf("DP: C = %g, σ_DP = %g, B = %d (%s), σ_w = σ_DP·C/B = %.4g, noise seed %d%s\n",
		cfg.Clip, cfg.Sigma, cfg.Batch, sampling, res.SigmaW, res.Seed, seedNote)
	tr.logf("training: %d epochs of %d steps\n", cfg.Epochs, tr.smp.stepsPerEpoch())
	return res
}

// epoch runs one epoch of steps and records its statistics in res.
func (tr *trainer) epoch(res *result) error {
	for k := range tr.smp.stepsPerEpoch() {
		tr.idx = tr.smp.batch(tr.idx, k)
		if err := tr.step(); err != nil {
			return err
		}
	}
	ds := tr.ds
	res.Epochs = append(res.Epochs, epochStats{TrainLoss: tr.theta.loss(ds.trainX, ds.trainY), TestAcc: tr.theta.accuracy(ds.testX, ds.testY)})
	return nil
}

// step privatizes the batch tr.idx and has the optimizer step on it.
func (tr *trainer) step() error {
	if err := tr.privatize(); err != nil {
		return err
	}
	if err := tr.o.Step(); err != nil {
		return fmt.Errorf("step %d: %w", tr.o.Steps(), err)
	}
	return readModel(tr.theta, (*runtime.Tensor).Params, tr.wT, tr.bT)
}

// privatize hands the runtime the gradient rows of the batch tr.idx, k of
// them (under Poisson sampling k varies and may be 0): at θ_t, and for a
// two-point optimizer also at the look-ahead point the runtime keeps. The
// runtime mixes each example's two rows with the observation's a, clips
// the mix to norm C over weight and bias together and writes the sum over
// B into the gradient buffer, for the step to add the noise to.
func (tr *trainer) privatize() error {
	tr.cur = tr.ds.appendGrads(tr.cur[:0], tr.theta, tr.idx)
	var look []float32
	if tr.o.Observation().Kind == "two_point" {
		if err := readModel(tr.look, (*runtime.Tensor).Lookahead, tr.wT, tr.bT); err != nil {
			return err
		}
		tr.lk = tr.ds.appendGrads(tr.lk[:0], tr.look, tr.idx)
		look = tr.lk
	}
	if _, err := tr.o.Privatize(tr.cur, look); err != nil {
		return fmt.Errorf("step %d: %w", tr.o.Steps(), err)
	}
	return nil
}

// finish fills in the final results and baselines and logs them.
func (tr *trainer) finish(res *result) (*result, error) {
	ds, o := tr.ds, tr.o
	res.Backend, res.Steps = o.Backend(), o.Steps()
	res.TestAcc = tr.theta.accuracy(ds.testX, ds.testY)
	truth := append(model(ds.trueW), ds.trueB)
	res.TrueAcc = truth.accuracy(ds.testX, ds.testY)
	res.TrueLoss = truth.loss(ds.trainX, ds.trainY)
	res.MajorityAcc = majorityAccuracy(ds.trainY, ds.testY)
	var err error
	if res.Weight, err = tr.wT.Params(); err != nil {
		return nil, err
	}
	b, err := tr.bT.Params()
	if err != nil {
		return nil, err
	}
	res.Bias = b[0]
	tr.logf("done: %d steps on backend %s, σ_w = %.4g: final test accuracy %.4f, train loss %.4f\n",
		res.Steps, res.Backend, res.SigmaW, res.TestAcc, res.Epochs[len(res.Epochs)-1].TrainLoss)
	tr.logf("baselines: the true weights %.4f (train loss %.4f), always the majority class %.4f\n", res.TrueAcc, res.TrueLoss, res.MajorityAcc)
	if tr.cfg.Sampling == "poisson" {
		if res.Privacy, err = spent(len(ds.trainX), tr.cfg, res.Steps); err != nil {
			return nil, err
		}
		tr.logf("privacy: (ε = %.3g, δ = %.3g)-DP after %d steps (PLD accountant, Poisson sampling at rate B/N)\n", res.Privacy.Epsilon, res.Privacy.Delta, res.Steps)
	}
	return res, nil
}

// describeBackend says which backend runs the steps, and why the CPU
// backend runs the Go reference where it does.
func describeBackend(o *runtime.Optimizer, dir, asked string) string {
	so := o.Manifest().Kernels.SharedObject
	switch b := o.Backend(); {
	case b == runtime.CPU:
		return fmt.Sprintf("cpu (the host kernel %s)", filepath.Join(dir, so))
	case b == runtime.Go && asked == "cpu":
		build := fmt.Sprintf("`fibergen build optimizers/%s.dsl` (or `make generate`) builds it", o.Name())
		if o.Name() == "fiber" {
			build = "`make build` builds it"
		}
		return fmt.Sprintf("go (the Go reference on every core: %s has no %s; %s)", dir, so, build)
	case b == runtime.Go:
		return "go (the Go reference on every core)"
	default:
		return string(b)
	}
}

// readModel reads into theta what read returns of the weight and bias
// tensors: their parameters (Tensor.Params) or their look-ahead point
// (Tensor.Lookahead).
func readModel(theta model, read func(*runtime.Tensor) ([]float32, error), wT, bT *runtime.Tensor) error {
	w, err := read(wT)
	if err != nil {
		return err
	}
	b, err := read(bT)
	if err != nil {
		return err
	}
	for j, x := range w {
		theta[j] = float64(x)
	}
	theta[len(w)] = float64(b[0])
	return nil
}

// majorityAccuracy is the test accuracy of always predicting the training
// set's majority class.
func majorityAccuracy(trainY, testY []float64) float64 {
	ones := 0.0
	for _, y := range trainY {
		ones += y
	}
	major := 0.0
	if 2*ones >= float64(len(trainY)) {
		major = 1
	}
	right := 0
	for _, y := range testY {
		if y == major {
			right++
		}
	}
	return float64(right) / float64(len(testY))
}

func (c config) check() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	nTest := max(1, int(math.Round(testShare*float64(c.N))))
	switch {
	case c.D < 1:
		return fmt.Errorf("-d %d: want at least 1 feature", c.D)
	case c.Batch < 1:
		return fmt.Errorf("-batch %d: want at least 1", c.Batch)
	case c.N < 2 || c.N-nTest < c.Batch:
		return fmt.Errorf("-n %d: with %.0f%% held out for testing, want at least -batch (%d) training examples", c.N, 100*testShare, c.Batch)
	case c.Epochs < 1:
		return fmt.Errorf("-epochs %d: want at least 1", c.Epochs)
	case !(c.Clip > 0) || !finite(c.Clip):
		return fmt.Errorf("-clip %v: want a finite value > 0", c.Clip)
	case !(c.Sigma > 0) || !finite(c.Sigma):
		return fmt.Errorf("-sigma %v: want a finite value > 0 (the example trains with DP, and its accountant needs noise)", c.Sigma)
	case !(c.LR >= 0) || !finite(c.LR):
		return fmt.Errorf("-lr %v: want a finite value > 0 (or 0 for the optimizer's default)", c.LR)
	case c.Sampling != "poisson" && c.Sampling != "shuffle":
		return fmt.Errorf("-sampling %q: want poisson or shuffle", c.Sampling)
	case c.Backend != "cpu" && c.Backend != "go" && c.Backend != "cuda":
		return fmt.Errorf("-backend %q: want cpu, go or cuda", c.Backend)
	}
	return nil
}

// findOptimizer returns the directory of the generated optimizer at path:
// path itself, or, when that does not exist and path is relative, path
// under the module root (the nearest directory above the working
// directory that holds go.mod), so that the default generated/fiber works
// from anywhere in the repository. The directory must hold <name>.json.
func findOptimizer(path string) (string, error) {
	if path == "" {
		return "", errors.New("-optimizer: want the directory fibergen build wrote, e.g. generated/fiber")
	}
	name := filepath.Base(filepath.Clean(path))
	build := fmt.Sprintf("run `fibergen build optimizers/%s.dsl` in the repository root", name)
	if name == "fiber" {
		build = "run `make build` (or `fibergen build optimizers/fiber.dsl`) in the repository root"
	}
	dir := path
	if _, err := os.Stat(dir); err != nil && !filepath.IsAbs(path) {
		if root := moduleRoot(); root != "" {
			if _, err := os.Stat(filepath.Join(root, path)); err == nil {
				dir = filepath.Join(root, path)
			}
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("no optimizer directory %s: %s", path, build)
	}
	manifest := filepath.Join(dir, name+".json")
	if _, err := os.Stat(manifest); err != nil {
		return "", fmt.Errorf("%s is not a generated optimizer (no %s): %s", dir, manifest, build)
	}
	return dir, nil
}

// moduleRoot is the nearest directory at or above the working directory
// that holds go.mod, or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// softplus is log(1 + e^z) without overflow.
func softplus(z float64) float64 { return max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) }

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func norm(v []float64) float64 { return math.Sqrt(dot(v, v)) }

func scale(v []float64, c float64) {
	for i := range v {
		v[i] *= c
	}
}

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the command with args, printing the run on stdout and any error
// as one line on stderr; it returns the exit status (2: bad flags).
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logreg", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := config{Log: stdout}
	fs.StringVar(&cfg.Optimizer, "optimizer", "generated/fiber", "the generated optimizer's `dir`ectory (relative paths also resolve from the module root)")
	fs.StringVar(&cfg.Backend, "backend", "cpu", "where the steps run: cpu (the host kernel, or the Go reference without <name>.so), go or cuda")
	fs.IntVar(&cfg.N, "n", 10000, "examples, train and test together (20% held out)")
	fs.IntVar(&cfg.D, "d", 20, "features")
	fs.IntVar(&cfg.Batch, "batch", 128, "batch size B (the expected size under Poisson sampling)")
	fs.IntVar(&cfg.Epochs, "epochs", 10, "epochs")
	fs.Float64Var(&cfg.Clip, "clip", 1, "per-example clipping norm C, over weight and bias together")
	fs.Float64Var(&cfg.Sigma, "sigma", 1, "noise multiplier σ_DP (noise std per coordinate σ_DP·C/B)")
	fs.Float64Var(&cfg.LR, "lr", 0.05, "the optimizer's lr hyper (0: keep the optimizer's default)")
	fs.Func("set", "set a hyper, `name=value` (repeatable), e.g. -set omega=0.5", func(s string) error {
		cfg.Set = append(cfg.Set, s)
		return nil
	})
	fs.StringVar(&cfg.Sampling, "sampling", "poisson", "batch sampling: poisson or shuffle (fixed-size batches of a fresh permutation each epoch)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "noise and batch-sampling seed (default: random, printed)")
	fs.Uint64Var(&cfg.DataSeed, "data-seed", 1, "seed of the synthetic data set")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./examples/logreg [flags]\n\n"+
			"Trains logistic regression on synthetic data with DP (per-example clipping and noise by\n"+
			"the generated optimizer's kernels) and prints the learning curve and baselines.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "logreg: %v (see -help)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "logreg: unexpected argument %q (see -help)\n", fs.Arg(0))
		return 2
	}
	fs.Visit(func(f *flag.Flag) { cfg.SeedSet = cfg.SeedSet || f.Name == "seed" })
	if err := cfg.check(); err != nil {
		fmt.Fprintf(stderr, "logreg: %v\n", err)
		return 2
	}
	if _, err := run(cfg); err != nil {
		fmt.Fprintf(stderr, "logreg: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	return 0
}
