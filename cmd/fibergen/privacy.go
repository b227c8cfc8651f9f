package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/runtime"
)

// privacyOptions are the flags of fibergen privacy.
type privacyOptions struct {
	sigma, epsilon, sampleRate, delta, epochs, interval floatFlag
	steps, datasetSize, batchSize                       countFlag53
	sampling, accountant, series, orders, optimizer     string
	sets                                                setsFlag
	json                                                bool
	given                                               map[string]bool
}

// privacyRun is what the flags describe: the subcommand, the run and the
// orders, ready for the accountant.
type privacyRun struct {
	sub  string // epsilon or sigma
	plan privacy.Plan
	// schedule is set when the run was given as dataset size, batch
	// size and epochs.
	schedule *privacy.Schedule
	// optimizer is --optimizer's, whose noise block's strategy the plan
	// holds.
	optimizer string
}

func cmdPrivacy(args []string, stdout, stderr io.Writer) int {
	o := privacyOptions{given: map[string]bool{}}
	fs := flag.NewFlagSet("privacy", flag.ContinueOnError)
	o.define(fs)
	pos, ok := parseFlags(fs, args, stderr)
	if !ok {
		return 2
	}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	r, msg := o.parse(pos)
	if msg != "" {
		return usageError(stderr, "privacy", "%s", msg)
	}
	if code := o.takeOptimizer(&r, stderr); code != 0 {
		return code
	}
	switch r.sub {
	case "epsilon":
		return o.runEpsilon(r, stdout, stderr)
	case "delta":
		return o.runDelta(r, stdout, stderr)
	}
	return o.runSigma(r, stdout, stderr)
}

func (o *privacyOptions) define(fs *flag.FlagSet) {
	fs.Var(&o.sigma, "sigma", "noise multiplier: noise std over the sensitivity (epsilon, delta)")
	fs.Var(&o.epsilon, "epsilon", "target epsilon (sigma), or the epsilon whose delta is asked (delta)")
	fs.Var(&o.sampleRate, "sample-rate", "sampling rate q = B/N, in (0, 1]")
	fs.Var(&o.steps, "steps", "number of steps T")
	fs.Var(&o.delta, "delta", "target delta, in (0, 1) (default with --dataset-size: 1/N^1.1)")
	fs.Var(&o.datasetSize, "dataset-size", "dataset size N (with --batch-size and --epochs)")
	fs.Var(&o.batchSize, "batch-size", "batch size B")
	fs.Var(&o.epochs, "epochs", "number of epochs; steps = epochs × ⌈N/B⌉, rounded up")
	fs.StringVar(&o.sampling, "sampling", "poisson", "poisson (add/remove one), fixed (without replacement, replace one) or cyclic (fixed batches in the same order every epoch, replace one, no amplification)")
	fs.StringVar(&o.optimizer, "optimizer", "", "a .dsl file or shipped optimizer whose noise block correlates the noise (with --sampling cyclic)")
	fs.Var(&o.sets, "set", "with --optimizer: override a hyper, name=value (repeatable)")
	fs.StringVar(&o.accountant, "accountant", privacy.PLD.String(), "pld (privacy loss distributions) or rdp (Rényi DP)")
	fs.Var(&o.interval, "interval", "pld: loss grid spacing (default: privacy.Interval, at most 1e-3)")
	fs.StringVar(&o.series, "series", "exact", "rdp: fractional orders of poisson, exact or magnitudes (as dp_accounting)")
	fs.StringVar(&o.orders, "orders", "", "rdp: comma-separated Rényi orders (default: privacy.DefaultOrders)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

// parse checks the subcommand and the flags, which need no file, and
// returns the run or a usage message.
func (o *privacyOptions) parse(pos []string) (privacyRun, string) {
	var r privacyRun
	if msg := o.parseSub(pos, &r); msg != "" {
		return r, msg
	}
	if msg := o.checkNoise(r.sub); msg != "" {
		return r, msg
	}
	if msg := o.parseRun(&r); msg != "" {
		return r, msg
	}
	return r, o.parseMechanism(&r)
}

// parseSub reads the subcommand, the one positional argument.
func (o *privacyOptions) parseSub(pos []string, r *privacyRun) string {
	switch {
	case len(pos) == 0:
		return "want a subcommand: epsilon, sigma or delta"
	case noiseFlags[pos[0]] == nil:
		return fmt.Sprintf("unknown subcommand %q (want epsilon, sigma or delta)", pos[0])
	case len(pos) > 1:
		return fmt.Sprintf("unexpected argument %q", pos[1])
	}
	r.sub = pos[0]
	return ""
}

// noiseFlags are the flags of --sigma and --epsilon each subcommand
// takes: the ε a σ spends, the σ an ε needs, the δ of an ε at a σ.
var noiseFlags = map[string][]string{"epsilon": {"sigma"}, "sigma": {"epsilon"}, "delta": {"sigma", "epsilon"}}

// checkNoise checks --sigma and --epsilon, those the subcommand takes.
func (o *privacyOptions) checkNoise(sub string) string {
	takes := noiseFlags[sub]
	for _, f := range []string{"sigma", "epsilon"} {
		if o.given[f] && !slices.Contains(takes, f) {
			return fmt.Sprintf("privacy %s takes --%s, not --%s", sub, takes[0], f)
		}
	}
	for _, f := range takes {
		if !o.given[f] {
			return fmt.Sprintf("--%s is required", f)
		}
	}
	sigma, eps := float64(o.sigma), float64(o.epsilon)
	switch {
	case o.given["sigma"] && !(sigma >= privacy.MinSigma && sigma <= privacy.MaxSigma):
		return fmt.Sprintf("--sigma %v: want a value in [%g, %g]", sigma, privacy.MinSigma, privacy.MaxSigma)
	case sub == "sigma" && (!(eps > 0) || math.IsInf(eps, 1)):
		return fmt.Sprintf("--epsilon %v: want a finite value > 0", eps)
	case sub == "delta" && (!(eps >= 0) || math.IsInf(eps, 1)):
		return fmt.Sprintf("--epsilon %v: want a finite value >= 0", eps)
	}
	return ""
}

// parseRun reads the run: --sample-rate and --steps, or --dataset-size,
// --batch-size and --epochs; and --delta.
func (o *privacyOptions) parseRun(r *privacyRun) string {
	rate := o.given["sample-rate"] || o.given["steps"]
	sched := o.given["dataset-size"] || o.given["batch-size"] || o.given["epochs"]
	switch {
	case rate == sched,
		rate && !(o.given["sample-rate"] && o.given["steps"]),
		sched && !(o.given["dataset-size"] && o.given["batch-size"] && o.given["epochs"]):
		return "give --sample-rate and --steps, or --dataset-size, --batch-size and --epochs"
	case rate:
		if msg := o.parseRateSteps(r); msg != "" {
			return msg
		}
	default:
		if msg := o.parseSchedule(r); msg != "" {
			return msg
		}
	}
	return o.parseDelta(r)
}

// maxCount bounds the integer flags: 2^53, exact in float64.
const maxCount = 1 << 53

// countFlag53 is an integer flag from 1 to maxCount, whose parse error says
// so.
type countFlag53 uint64

func (c *countFlag53) String() string { return strconv.FormatUint(uint64(*c), 10) }
func (c *countFlag53) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < 1 || v > maxCount {
		return errors.New("want an integer from 1 to 2^53")
	}
	*c = countFlag53(v)
	return nil
}

func (o *privacyOptions) parseRateSteps(r *privacyRun) string {
	q := float64(o.sampleRate)
	switch {
	case !(q > 0 && q <= 1):
		return fmt.Sprintf("--sample-rate %v: want a value in (0, 1]", q)
	}
	r.plan.SampleRate, r.plan.Steps = q, int(o.steps)
	return ""
}

func (o *privacyOptions) parseSchedule(r *privacyRun) string {
	n, b, e := uint64(o.datasetSize), uint64(o.batchSize), float64(o.epochs)
	switch {
	case b > n:
		return fmt.Sprintf("--batch-size %d: want 1 to the --dataset-size %d", b, n)
	case !(e > 0) || math.IsInf(e, 1):
		return fmt.Sprintf("--epochs %v: want a finite value > 0", e)
	}
	s := &privacy.Schedule{DatasetSize: int(n), BatchSize: int(b), Epochs: e}
	if s.Steps() > privacy.MaxSteps {
		return fmt.Sprintf("--epochs %v: the run has more than 2^53 steps", e)
	}
	r.schedule = s
	r.plan.SampleRate, r.plan.Steps = s.SampleRate(), s.Steps()
	return ""
}

func (o *privacyOptions) parseDelta(r *privacyRun) string {
	d := float64(o.delta)
	switch {
	case r.sub == "delta" && o.given["delta"]:
		return "privacy delta answers the delta: give --epsilon, not --delta"
	case r.sub == "delta":
	case o.given["delta"] && !(d > 0 && d < 1):
		return fmt.Sprintf("--delta %v: want a value in (0, 1)", d)
	case o.given["delta"]:
		r.plan.Delta = d
	case r.schedule == nil && o.sampling == privacy.Cyclic.String():
		return cyclicRunMsg // first: a delta would not make the run right
	case r.schedule == nil:
		return "--delta is required with --sample-rate and --steps"
	case r.schedule.DatasetSize < 2:
		return "--delta is required with --dataset-size 1 (1/N^1.1 is 1)"
	default:
		r.plan.Delta = privacy.DefaultDelta(r.schedule.DatasetSize)
	}
	return ""
}

// parseMechanism reads --sampling and --accountant, and the flags of the
// accountant: --interval, or --series and --orders.
func (o *privacyOptions) parseMechanism(r *privacyRun) string {
	var err error
	if r.plan.Sampling, err = privacy.ParseSampling(o.sampling); err != nil {
		return "--" + err.Error()
	}
	if msg := o.parseCyclic(r); msg != "" {
		return msg
	}
	if r.plan.Accounting, err = privacy.ParseAccounting(o.accountant); err != nil {
		return "--" + err.Error()
	}
	if r.plan.Accounting == privacy.PLD {
		return o.parsePLD(r)
	}
	if o.given["interval"] {
		return "--interval applies to --accountant pld"
	}
	if r.plan.Series, err = privacy.ParseSeries(o.series); err != nil {
		return "--" + err.Error()
	}
	if o.given["orders"] {
		if r.plan.Orders, err = parseOrders(o.orders); err != nil {
			return err.Error()
		}
	}
	return ""
}

// cyclicRunMsg refuses a cyclic run given by its rate and steps.
const cyclicRunMsg = "--sampling cyclic: give --dataset-size, --batch-size and --epochs (an example's batches are an epoch, ⌈N/B⌉ steps, apart)"

// parseCyclic gives cyclic sampling its separation, one epoch of steps,
// which only the schedule's form of the run says; --set goes with
// --optimizer.
func (o *privacyOptions) parseCyclic(r *privacyRun) string {
	switch {
	case o.given["set"] && !o.given["optimizer"]:
		return "--set applies to the hypers of an --optimizer"
	case r.plan.Sampling != privacy.Cyclic:
		return ""
	case o.given["interval"] || o.given["series"]:
		return "--interval and --series do not apply to --sampling cyclic: its run is one Gaussian mechanism, accounted exactly"
	case r.schedule == nil:
		return cyclicRunMsg
	}
	r.plan.MinSep, r.schedule.Sampling = r.schedule.StepsPerEpoch(), privacy.Cyclic
	return ""
}

// takeOptimizer compiles --optimizer and gives the plan the strategy of
// its noise block at the --set hypers (none for independent noise); it
// returns a non-zero exit status where it cannot.
func (o *privacyOptions) takeOptimizer(r *privacyRun, stderr io.Writer) int {
	if o.optimizer == "" {
		return 0
	}
	u := checkFile(o.optimizer, stderr)
	if u == nil {
		return 1
	}
	h, err := u.Func.ApplySettings(o.sets)
	if err != nil {
		return fail(stderr, "privacy", err)
	}
	r.optimizer = u.Func.Name
	switch {
	case u.Func.Noise == nil:
		return 0
	case r.plan.Sampling.CheckCorrelated() != nil:
		return usageError(stderr, "privacy", "--%v (%s has a noise block)", r.plan.Sampling.CheckCorrelated(), u.Func.Name)
	}
	if r.plan.Strategy, err = runtime.StrategyFor(u.Func, h, *r.schedule); err != nil { // cyclic: a schedule
		return fail(stderr, "privacy", err)
	}
	return 0
}

// parsePLD reads --interval and refuses the flags of RDP.
func (o *privacyOptions) parsePLD(r *privacyRun) string {
	for _, f := range []string{"series", "orders"} {
		if o.given[f] {
			return "--" + f + " applies to --accountant rdp"
		}
	}
	h := float64(o.interval)
	if o.given["interval"] && !(h >= privacy.MinInterval && h <= 1) {
		return fmt.Sprintf("--interval %v: want a value in [%g, 1]", h, privacy.MinInterval)
	}
	r.plan.Interval = h
	return ""
}

// parseOrders reads a comma-separated list of orders in
// (1, privacy.MaxOrder].
func parseOrders(s string) ([]float64, error) {
	var orders []float64
	for _, f := range strings.Split(s, ",") {
		a, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(a > 1 && a <= privacy.MaxOrder) {
			return nil, fmt.Errorf("--orders %q: want comma-separated orders in (1, %d]", s, privacy.MaxOrder)
		}
		orders = append(orders, a)
	}
	return orders, nil
}

// privacyReport is what fibergen privacy prints; its JSON form is the
// --json output.
type privacyReport struct {
	Epsilon       float64  `json:"epsilon"`
	TargetEpsilon *float64 `json:"target_epsilon,omitempty"`
	Sigma         float64  `json:"sigma"`
	Delta         float64  `json:"delta"`
	SampleRate    float64  `json:"sample_rate"`
	Steps         int      `json:"steps"`
	Sampling      string   `json:"sampling"`
	Accountant    string   `json:"accountant"`
	Interval      float64  `json:"interval,omitempty"` // pld
	Order         float64  `json:"order,omitempty"`    // rdp
	Series        string   `json:"series,omitempty"`   // rdp
	DatasetSize   int      `json:"dataset_size,omitempty"`
	BatchSize     int      `json:"batch_size,omitempty"`
	Epochs        float64  `json:"epochs,omitempty"`
	// cyclic: the steps between an example's batches, and the run's
	// sensitivity in units of one participation's (and whether it is
	// exact, not an upper bound); the optimizer whose noise it is.
	MinSep           int     `json:"min_separation,omitempty"`
	Sensitivity      float64 `json:"sensitivity,omitempty"`
	SensitivityExact bool    `json:"sensitivity_exact,omitempty"`
	Optimizer        string  `json:"optimizer,omitempty"`
}

func (o *privacyOptions) runEpsilon(r privacyRun, stdout, stderr io.Writer) int {
	g, err := r.plan.Epsilon(float64(o.sigma))
	if err == nil && math.IsInf(g.Epsilon, 1) {
		err = fmt.Errorf("epsilon is unbounded at sigma %v", float64(o.sigma))
	}
	if err != nil {
		return fail(stderr, "privacy epsilon", err)
	}
	return o.print(stdout, newReport(r, float64(o.sigma), g, nil))
}

func (o *privacyOptions) runDelta(r privacyRun, stdout, stderr io.Writer) int {
	sigma, eps := float64(o.sigma), float64(o.epsilon)
	delta, err := r.plan.DeltaAt(sigma, eps)
	if err != nil {
		return fail(stderr, "privacy delta", err)
	}
	return o.print(stdout, newReport(r, sigma, privacy.Guarantee{Epsilon: eps, Delta: delta}, nil))
}

func (o *privacyOptions) runSigma(r privacyRun, stdout, stderr io.Writer) int {
	target := float64(o.epsilon)
	sigma, g, err := r.plan.Sigma(target)
	if err != nil {
		return fail(stderr, "privacy sigma", err)
	}
	return o.print(stdout, newReport(r, sigma, g, &target))
}

func newReport(r privacyRun, sigma float64, g privacy.Guarantee, target *float64) privacyReport {
	x := privacyReport{
		Epsilon: g.Epsilon, TargetEpsilon: target, Sigma: sigma, Delta: g.Delta,
		SampleRate: r.plan.SampleRate, Steps: r.plan.Steps,
		Sampling: r.plan.Sampling.String(), Accountant: r.plan.Accounting.String(),
	}
	switch {
	case r.plan.Accounting == privacy.RDP:
		x.Order, x.Series = g.Order, r.plan.Series.String()
	case r.plan.Sampling != privacy.Cyclic:
		x.Interval = r.plan.PLDInterval(sigma)
	}
	if r.plan.Sampling == privacy.Cyclic {
		x.MinSep, x.Optimizer = r.plan.MinSep, r.optimizer
		x.Sensitivity, x.SensitivityExact, _ = r.plan.Sensitivity() // computed already: the plan answered
	}
	if s := r.schedule; s != nil {
		x.DatasetSize, x.BatchSize, x.Epochs = s.DatasetSize, s.BatchSize, s.Epochs
	}
	return x
}

func (o *privacyOptions) print(stdout io.Writer, x privacyReport) int {
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(x)
		return 0
	}
	how := fmt.Sprintf("PLD, loss grid %.3g", x.Interval)
	switch {
	case x.Accountant == privacy.RDP.String():
		how = fmt.Sprintf("RDP, order %v, converted as Balle et al. 2020", x.Order)
	case x.Sampling == privacy.Cyclic.String():
		how = "exact Gaussian mechanism"
	}
	switch {
	case x.TargetEpsilon != nil:
		fmt.Fprintf(stdout, "sigma %s: epsilon %.10g <= %g at delta %.4g (%s)\n", formatUp(x.Sigma, 7), x.Epsilon, *x.TargetEpsilon, x.Delta, how)
	case o.given["epsilon"]: // privacy delta
		fmt.Fprintf(stdout, "delta %.6g at epsilon %g (%s)\n", x.Delta, x.Epsilon, strings.Replace(how, ", order 0", "", 1))
	default:
		fmt.Fprintf(stdout, "epsilon %.10g at delta %.4g (%s)\n", x.Epsilon, x.Delta, how)
	}
	fmt.Fprintf(stdout, "%s; %s\n", describeRun(x), describeSampling(x, o.defaultDeltaNote(x)))
	return 0
}

// describeRun says how many steps at what rate, and where they came from.
func describeRun(x privacyReport) string {
	run := fmt.Sprintf("%d steps at sample rate %.6g", x.Steps, x.SampleRate)
	if x.DatasetSize == 0 {
		return run
	}
	return fmt.Sprintf("%s (N = %d, B = %d, %g epochs of %d steps)", run, x.DatasetSize, x.BatchSize, x.Epochs, (x.DatasetSize+x.BatchSize-1)/x.BatchSize)
}

// describeSampling names the sampling, its neighbouring relation and the
// noise the multiplier stands for.
func describeSampling(x privacyReport, note string) string {
	switch x.Sampling {
	case "fixed":
		return "fixed-size batches without replacement, replace-one adjacency: noise std = sigma × 2 × clip norm" + note
	case "cyclic":
		return describeCyclic(x) + note
	}
	return "Poisson sampling, add/remove-one adjacency: noise std = sigma × clip norm" + note
}

// describeCyclic says what a cyclic run's one Gaussian mechanism is.
func describeCyclic(x privacyReport) string {
	noise, exact := "independent noise", "exact"
	if x.Optimizer != "" {
		noise = x.Optimizer + "'s noise"
	}
	if !x.SensitivityExact {
		exact = "an upper bound"
	}
	return fmt.Sprintf("fixed batches, the same order every epoch (each example once every %d steps), replace-one adjacency, no amplification: %s is one Gaussian mechanism of sensitivity %.6g (%s) × 2 × clip norm; noise std = sigma × 2 × clip norm",
		x.MinSep, noise, x.Sensitivity, exact)
}

func (o *privacyOptions) defaultDeltaNote(x privacyReport) string {
	if o.given["delta"] || x.DatasetSize == 0 || o.given["epsilon"] && x.TargetEpsilon == nil {
		return ""
	}
	return "; delta = 1/N^1.1"
}

// formatUp prints x > 0 to digits significant digits, rounded up, so that
// a noise multiplier copied from the output still meets its target (ε
// falls as σ grows). The decimal below x is bumped by one unit in its
// last digit, which puts it above x by at least half a unit.
func formatUp(x float64, digits int) string {
	s := strconv.FormatFloat(x, 'e', digits-1, 64)
	if v, _ := strconv.ParseFloat(s, 64); v >= x {
		return strconv.FormatFloat(v, 'g', digits, 64)
	}
	_, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	v, _ := strconv.ParseFloat(s, 64)
	step, _ := strconv.ParseFloat(fmt.Sprintf("1e%d", e-digits+1), 64)
	up, _ := strconv.ParseFloat(strconv.FormatFloat(v+step, 'e', digits-1, 64), 64)
	return strconv.FormatFloat(up, 'g', digits, 64)
}
