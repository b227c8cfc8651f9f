package main

import (
	"encoding/json"
	"fmt"
	"github.com/fibergen/fibergen/corrnoise"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/privacy"
)

// opacusOrdersFlag is Opacus' DEFAULT_ALPHAS as an --orders value.
func opacusOrdersFlag() string {
	var orders []string
	for x := 1; x < 100; x++ {
		orders = append(orders, strconv.FormatFloat(1+float64(x)/10, 'g', -1, 64))
	}
	for a := 12; a < 64; a++ {
		orders = append(orders, strconv.Itoa(a))
	}
	return strings.Join(orders, ",")
}

// privacyJSON runs a fibergen privacy command line with --json.
func privacyJSON(t *testing.T, args ...string) privacyReport {
	t.Helper()
	r := mustRun(t, append(append([]string{"privacy"}, args...), "--json")...)
	var x privacyReport
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil {
		t.Fatalf("fibergen privacy %s: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
	return x
}

// Opacus' test_rdp_accountant run (privacy/published_test.go says more):
// ε = 7.32911117143 with Opacus' orders.
func TestPrivacyEpsilonOpacus(t *testing.T) {
	x := privacyJSON(t, "epsilon", "--accountant", "rdp", "--sigma", "1.5", "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5", "--orders", opacusOrdersFlag())
	if math.Abs(x.Epsilon-7.32911117143) > 1e-10 || x.Order != 3.9 || x.Steps != 2250 || x.Sampling != "poisson" {
		t.Errorf("got %+v, want epsilon 7.32911117143 at order 3.9", x)
	}
}

// The command reports what the package computes, for runs given either
// way, both samplings and both subcommands.
func TestPrivacyMatchesPackage(t *testing.T) {
	for _, c := range []struct {
		args []string
		plan privacy.Plan
	}{
		{[]string{"--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-6"},
			privacy.Plan{SampleRate: 0.01, Steps: 1000, Delta: 1e-6}},
		{[]string{"--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-6", "--sampling", "fixed"},
			privacy.Plan{Sampling: privacy.Fixed, SampleRate: 0.01, Steps: 1000, Delta: 1e-6}},
		{[]string{"--dataset-size", "50000", "--batch-size", "500", "--epochs", "2.5", "--accountant", "rdp", "--series", "magnitudes", "--orders", "1.5,2,4,8.5,16"},
			privacy.Plan{Accounting: privacy.RDP, Series: privacy.MagnitudeSeries, SampleRate: 0.01, Steps: 250, Delta: privacy.DefaultDelta(50000), Orders: []float64{1.5, 2, 4, 8.5, 16}}},
		{[]string{"--sample-rate", "0.02", "--steps", "300", "--delta", "1e-5", "--accountant", "pld", "--interval", "5e-4"},
			privacy.Plan{SampleRate: 0.02, Steps: 300, Delta: 1e-5, Interval: 5e-4}},
	} {
		want, err := c.plan.Epsilon(1.1)
		if err != nil {
			t.Fatal(err)
		}
		x := privacyJSON(t, append([]string{"epsilon", "--sigma", "1.1"}, c.args...)...)
		if x.Epsilon != want.Epsilon || x.Order != want.Order || x.Delta != c.plan.Delta || x.Steps != c.plan.Steps ||
			x.SampleRate != c.plan.SampleRate || x.Accountant != c.plan.Accounting.String() {
			t.Errorf("epsilon %v: got %+v, want %+v for %+v", c.args, x, want, c.plan)
		}
		d, err := c.plan.DeltaAt(1.1, 2)
		if err != nil {
			t.Fatal(err)
		}
		x = privacyJSON(t, append([]string{"delta", "--sigma", "1.1", "--epsilon", "2"}, withoutDelta(c.args)...)...)
		if x.Delta != d || x.Epsilon != 2 || x.Sigma != 1.1 || x.Accountant != c.plan.Accounting.String() {
			t.Errorf("delta %v: got %+v, want delta %v", c.args, x, d)
		}
		sigma, g, err := c.plan.Sigma(2)
		if err != nil {
			t.Fatal(err)
		}
		x = privacyJSON(t, append([]string{"sigma", "--epsilon", "2"}, c.args...)...)
		if x.Sigma != sigma || x.Epsilon != g.Epsilon || x.TargetEpsilon == nil || *x.TargetEpsilon != 2 || x.Epsilon > 2 {
			t.Errorf("sigma %v: got %+v, want sigma %v, %+v", c.args, x, sigma, g)
		}
	}
}

// withoutDelta drops --delta and its value from args.
func withoutDelta(args []string) []string {
	if i := slices.Index(args, "--delta"); i >= 0 {
		return slices.Delete(slices.Clone(args), i, i+2)
	}
	return args
}

// The human form: the answer, then the run and the sampling on a second
// line; flags may come before the subcommand.
func TestPrivacyText(t *testing.T) {
	r := mustRun(t, "privacy", "--dataset-size", "60000", "--batch-size", "256", "--epochs", "3", "sigma", "--epsilon", "1", "--sampling", "fixed")
	x := privacyJSON(t, "sigma", "--epsilon", "1", "--sampling", "fixed", "--dataset-size", "60000", "--batch-size", "256", "--epochs", "3")
	want := regexp.MustCompile(`^sigma (\S+): epsilon (\S+) <= 1 at delta 5\.547e-06 \(PLD, loss grid (\S+)\)\n` +
		`705 steps at sample rate 0\.00426667 \(N = 60000, B = 256, 3 epochs of 235 steps\); ` +
		`fixed-size batches without replacement, replace-one adjacency: noise std = sigma × 2 × clip norm; delta = 1/N\^1\.1\n$`)
	m := want.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("output does not match %s:\n%s", want, r.stdout)
	}
	if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < x.Sigma || v > x.Sigma*(1+1e-6) {
		t.Errorf("sigma printed as %s, want %v rounded up to 7 digits", m[1], x.Sigma)
	}
	checkPrinted(t, "epsilon", m[2], x.Epsilon, 10)
	checkPrinted(t, "loss grid", m[3], x.Interval, 3)

	r = mustRun(t, "privacy", "delta", "--sigma", "1", "--epsilon", "0.5", "--sample-rate", "0.001", "--steps", "10")
	if !regexp.MustCompile(`^delta \S+ at epsilon 0\.5 \(PLD, loss grid \S+\)\n10 steps at sample rate 0\.001; Poisson sampling`).MatchString(r.stdout) {
		t.Errorf("unexpected output:\n%s", r.stdout)
	}
	r = mustRun(t, "privacy", "epsilon", "--accountant", "rdp", "--sigma", "1", "--sample-rate", "0.001", "--steps", "10", "--delta", "1e-5")
	if !regexp.MustCompile(`^epsilon \S+ at delta 1e-05 \(RDP, order \S+, converted as Balle et al\. 2020\)\n10 steps at sample rate 0\.001; Poisson sampling, add/remove-one adjacency: noise std = sigma × clip norm\n$`).MatchString(r.stdout) {
		t.Errorf("unexpected output:\n%s", r.stdout)
	}
}

// checkPrinted checks that s is v printed to digits significant digits.
func checkPrinted(t *testing.T, name, s string, v float64, digits int) {
	t.Helper()
	if want := strconv.FormatFloat(v, 'g', digits, 64); s != want && s != fmt.Sprint(v) {
		t.Errorf("%s printed as %s, want %s", name, s, want)
	}
}

// privacyBad are bad fibergen privacy command lines, checked like
// badCases: the status, a one-line message, nothing on stdout.
var privacyBad = []badCase{
	{name: "no subcommand", args: "privacy --sigma 1", code: 2, msg: `^fibergen privacy: want a subcommand: epsilon, sigma or delta\n$`},
	{name: "unknown subcommand", args: "privacy gamma --sigma 1", code: 2, msg: `unknown subcommand "gamma" \(want epsilon, sigma or delta\)`},
	{name: "delta without epsilon", args: "privacy delta --sigma 1 --sample-rate 0.1 --steps 10", code: 2, msg: `^fibergen privacy: --epsilon is required\n$`},
	{name: "delta without sigma", args: "privacy delta --epsilon 1 --sample-rate 0.1 --steps 10", code: 2, msg: `^fibergen privacy: --sigma is required\n$`},
	{name: "delta with delta", args: "privacy delta --sigma 1 --epsilon 1 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `privacy delta answers the delta: give --epsilon, not --delta`},
	{name: "delta at negative epsilon", args: "privacy delta --sigma 1 --epsilon -1 --sample-rate 0.1 --steps 10", code: 2, msg: `--epsilon -1: want a finite value >= 0`},
	{name: "extra argument", args: "privacy epsilon sigma --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `unexpected argument "sigma"`},
	{name: "no sigma", args: "privacy epsilon --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `^fibergen privacy: --sigma is required`},
	{name: "no epsilon", args: "privacy sigma --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--epsilon is required`},
	{name: "sigma for sigma", args: "privacy sigma --sigma 1 --epsilon 1 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `privacy sigma takes --epsilon, not --sigma`},
	{name: "epsilon for epsilon", args: "privacy epsilon --epsilon 1 --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `privacy epsilon takes --sigma, not --epsilon`},
	{name: "sigma zero", args: "privacy epsilon --sigma 0 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--sigma 0: want a value in \[1e-06, 1e\+06\]`},
	{name: "sigma negative", args: "privacy epsilon --sigma -2 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--sigma -2: want a value in`},
	{name: "sigma nan", args: "privacy epsilon --sigma nan --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--sigma NaN: want a value in`},
	{name: "sigma not a number", args: "privacy epsilon --sigma x --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--sigma "x": want a number`},
	{name: "epsilon zero", args: "privacy sigma --epsilon 0 --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--epsilon 0: want a finite value > 0`},
	{name: "epsilon inf", args: "privacy sigma --epsilon inf --sample-rate 0.1 --steps 10 --delta 1e-5", code: 2, msg: `--epsilon \+Inf: want a finite value > 0`},
	{name: "sample rate zero", args: "privacy epsilon --sigma 1 --sample-rate 0 --steps 10 --delta 1e-5", code: 2, msg: `--sample-rate 0: want a value in \(0, 1\]`},
	{name: "sample rate above 1", args: "privacy epsilon --sigma 1 --sample-rate 1.5 --steps 10 --delta 1e-5", code: 2, msg: `--sample-rate 1.5: want a value in \(0, 1\]`},
	{name: "steps zero", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 0 --delta 1e-5", code: 2, msg: `--steps "0": want an integer from 1 to 2\^53`},
	{name: "steps fractional", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 2.5 --delta 1e-5", code: 2, msg: `--steps "2.5": want an integer`},
	{name: "delta one", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1", code: 2, msg: `--delta 1: want a value in \(0, 1\)`},
	{name: "delta zero", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 0", code: 2, msg: `--delta 0: want a value in \(0, 1\)`},
	{name: "no delta", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10", code: 2, msg: `--delta is required with --sample-rate and --steps`},
	{name: "no run", args: "privacy epsilon --sigma 1 --delta 1e-5", code: 2, msg: `give --sample-rate and --steps, or --dataset-size, --batch-size and --epochs`},
	{name: "mixed run", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --epochs 2 --delta 1e-5", code: 2, msg: `give --sample-rate and --steps, or`},
	{name: "half a schedule", args: "privacy epsilon --sigma 1 --dataset-size 100 --epochs 2", code: 2, msg: `give --sample-rate and --steps, or`},
	{name: "steps not an integer", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 1e6 --delta 1e-5", code: 2, msg: `--steps "1e6": want an integer from 1 to 2\^53`},
	{name: "dataset size zero", args: "privacy epsilon --sigma 1 --dataset-size 0 --batch-size 1 --epochs 1", code: 2, msg: `--dataset-size "0": want an integer from 1 to 2\^53`},
	{name: "batch above dataset", args: "privacy epsilon --sigma 1 --dataset-size 100 --batch-size 200 --epochs 1", code: 2, msg: `--batch-size 200: want 1 to the --dataset-size 100`},
	{name: "epochs zero", args: "privacy epsilon --sigma 1 --dataset-size 100 --batch-size 10 --epochs 0", code: 2, msg: `--epochs 0: want a finite value > 0`},
	{name: "epochs too many", args: "privacy epsilon --sigma 1 --dataset-size 100 --batch-size 10 --epochs 1e300", code: 2, msg: `--epochs 1e\+300: the run has more than 2\^53 steps`},
	{name: "default delta of one", args: "privacy epsilon --sigma 1 --dataset-size 1 --batch-size 1 --epochs 1", code: 2, msg: `--delta is required with --dataset-size 1 \(1/N\^1\.1 is 1\)`},
	{name: "sampling", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --sampling shuffle", code: 2, msg: `--sampling "shuffle": want poisson, fixed or cyclic`},
	{name: "cyclic by rate", args: "privacy sigma --epsilon 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --sampling cyclic", code: 2, msg: `^fibergen privacy: --sampling cyclic: give --dataset-size, --batch-size and --epochs \(an example's batches are an epoch`},
	{name: "cyclic by rate, no delta", args: "privacy sigma --epsilon 1 --sample-rate 0.1 --steps 10 --sampling cyclic", code: 2, msg: `^fibergen privacy: --sampling cyclic: give --dataset-size, --batch-size and --epochs`},
	{name: "interval of cyclic", args: "privacy sigma --epsilon 1 --dataset-size 100 --batch-size 10 --epochs 2 --sampling cyclic --interval 1e-3", code: 2, msg: `^fibergen privacy: --interval and --series do not apply to --sampling cyclic`},
	{name: "set without optimizer", args: "privacy sigma --epsilon 1 --dataset-size 100 --batch-size 10 --epochs 2 --set lr=1", code: 2, msg: `^fibergen privacy: --set applies to the hypers of an --optimizer\n$`},
	{name: "correlated under poisson", args: "privacy sigma --epsilon 1 --dataset-size 100 --batch-size 10 --epochs 2 --optimizer ../../tests/testdata/dsl/blt.dsl", code: 2, msg: `^fibergen privacy: --sampling poisson: a correlated-noise optimizer is accounted only under cyclic sampling .*no amplification by sampling is claimed for correlated noise \(blt_probe has a noise block\)\n$`},
	{name: "filter out of range", args: "privacy sigma --epsilon 1 --dataset-size 100 --batch-size 10 --epochs 2 --sampling cyclic --optimizer ../../tests/testdata/dsl/blt.dsl --set decay=0.99", code: 1, msg: `^fibergen privacy: hyper decay = 0\.99 is outside its range`},
	{name: "series", args: "privacy epsilon --accountant rdp --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --series abs", code: 2, msg: `--series "abs": want exact or magnitudes`},
	{name: "order one", args: "privacy epsilon --accountant rdp --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --orders 1,2", code: 2, msg: `--orders "1,2": want comma-separated orders in \(1, 10000\]`},
	{name: "orders empty", args: "privacy epsilon --accountant rdp --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --orders 2,,3", code: 2, msg: `--orders "2,,3": want comma-separated orders`},
	{name: "accountant", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --accountant prv", code: 2, msg: `^fibergen privacy: --accountant "prv": want pld or rdp\n$`},
	{name: "orders of pld", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --orders 2,3", code: 2, msg: `^fibergen privacy: --orders applies to --accountant rdp\n$`},
	{name: "series of pld", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --accountant pld --series exact", code: 2, msg: `--series applies to --accountant rdp`},
	{name: "interval of rdp", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --accountant rdp --interval 1e-3", code: 2, msg: `--interval applies to --accountant pld`},
	{name: "interval zero", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --interval 0", code: 2, msg: `--interval 0: want a value in \[1e-09, 1\]`},
	{name: "interval nan", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --interval nan", code: 2, msg: `--interval NaN: want a value in`},
	{name: "pld grid too wide", args: "privacy epsilon --sigma 0.01 --sample-rate 0.01 --steps 10 --delta 1e-5", code: 1, msg: `^fibergen privacy epsilon: the privacy loss of one step spans \[\S+, \S+\], more than 4194304 points of 0\.001: use the RDP accountant\n$`},
	{name: "json maybe", args: "privacy epsilon --sigma 1 --sample-rate 0.1 --steps 10 --delta 1e-5 --json=maybe", code: 2, msg: `^fibergen privacy: --json "maybe": want true or false\n$`},
	{name: "out of reach", args: "privacy sigma --accountant rdp --epsilon 1e-4 --sample-rate 1 --steps 1000000000 --delta 1e-5", code: 1, msg: `^fibergen privacy sigma: epsilon 0\.0001 is out of reach: even sigma = 1e\+06 gives epsilon \S+\n$`},
	{name: "met by any sigma", args: "privacy sigma --accountant rdp --epsilon 1e13 --sample-rate 0.01 --steps 1 --delta 1e-5", code: 1, msg: `^fibergen privacy sigma: epsilon 1e\+13 is met even by sigma = 1e-06, the smallest searched\n$`},
}

func TestPrivacyBadInput(t *testing.T) {
	dir := fixtureFiles(t)
	for _, c := range privacyBad {
		t.Run(c.name, func(t *testing.T) {
			checkBadRun(t, c, dir, expandArgs(c.args, dir, dir+"/out"))
		})
	}
}

func TestFormatUp(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{0.85348384, "0.8534839"}, {0.8534838, "0.8534838"}, {1.23456789e-5, "1.234568e-05"},
		{9.99999999, "10"}, {2, "2"}, {123456.71, "123456.8"},
	} {
		if got := formatUp(c.x, 7); got != c.want {
			t.Errorf("formatUp(%v, 7) = %s, want %s", c.x, got, c.want)
		}
	}
}

// A correlated-noise optimizer's run under fixed batches: one Gaussian
// mechanism whose sensitivity is that of the strategy summed densely over
// the pattern 0, b, 2b, … (the power-series inverse of the noise filter's
// coefficients), at the hypers --set gives; independent noise's is √k.
func TestPrivacyCyclic(t *testing.T) {
	run := []string{"--dataset-size", "200", "--batch-size", "10", "--epochs", "3", "--sampling", "cyclic"}
	white := privacyJSON(t, append([]string{"epsilon", "--sigma", "2"}, run...)...)
	if white.Sensitivity != math.Sqrt(3) || !white.SensitivityExact || white.MinSep != 20 || white.Optimizer != "" ||
		white.Epsilon != privacy.GaussianEpsilon(math.Sqrt(3)/2, white.Delta) {
		t.Errorf("independent noise: %+v, want sensitivity √3 and the Gaussian mechanism's ε", white)
	}
	d := privacyJSON(t, append([]string{"delta", "--sigma", "2", "--epsilon", "1"}, run...)...)
	if d.Sensitivity != math.Sqrt(3) || d.Delta != privacy.GaussianDelta(math.Sqrt(3)/2, 1) {
		t.Errorf("privacy delta, independent noise: %+v, want sensitivity √3 and the Gaussian mechanism's δ", d)
	}
	u := compileFile(bltDSL, &strings.Builder{})
	h, _ := u.Func.ApplySettings([]string{"decay=0.5"})
	strategy, err := corrnoise.Inverse(u.Func.NoiseCoefficients(h, 60))
	if err != nil {
		t.Fatal(err)
	}
	x := privacyJSON(t, append([]string{"sigma", "--epsilon", "2", "--optimizer", bltDSL, "--set", "decay=0.5"}, run...)...)
	if want := denseSensitivity(strategy, 20); math.Abs(x.Sensitivity-want) > 1e-12*want || x.Optimizer != "blt_probe" || x.Epsilon > 2 {
		t.Errorf("blt_probe at decay 0.5: %+v, want sensitivity %v", x, want)
	}
}
