package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// Vocabulary of the randomized command lines. Paths are relative to the
// fixture directory, which is the working directory of the test.
var (
	randCommands = []string{"build", "check", "explain", "explain", "run", "run", "run", "run", "privacy", "privacy", "help"}
	badCommands  = []string{"frobnicate", "", "-h", "--zzz", "fiber.dsl"}
	randFiles    = []string{
		"fiber.dsl", "dp_sgd.dsl", "disk.dsl", "dp_adamw.dsl", "dp_sgd_copy.dsl", "broken.dsl",
		"empty.dsl", "noread.dsl", "nope.dsl", "adir", "grads.npy",
	}
	randNPY = []string{
		"grads.npy", "theta.npy", "rank1.npy", "rank3.npy", "theta2d.npy", "wide.npy", "scalar.npy",
		"f64.npy", "i32.npy", "fortran.npy", "trunc.npy", "header_only.npy", "random.npy", "text.npy",
		"empty.npy", "nope.npy", "adir", "fiber.dsl",
	}
	randOuts    = []string{"out.npy", "out.npy", "outdir", "adir", "nodir/out.npy", "blocked", "gendir", "dangling", "rodir", "rodir/out.npy", "theta.npy/x"}
	randSets    = []string{"lr=0.5", "lr=1e-4", "lr=2", "kappa=0.5", "omega=1", "beta1=1", "lr", "=1", "lr=x", "foo=1", "lr=NaN", "wd=Inf", "lr="}
	randNumbers = []string{"0", "0", "0.5", "1", "42", "-1", "nan", "inf", "abc", "1e400"}
	randNoise   = []string{"on", "off", "off", "off", "maybe"}
	randBackend = []string{"go", "go", "cpu", "gpu", "ptxsim"}
	randBools   = []string{"", "", "", "=true", "=false", "=maybe"}
	// The privacy command's subcommands, runs and choices.
	randPrivacySubs = []string{"epsilon", "sigma", "epsilon", "sigma", "delta", "gamma"}
	randPrivacyRuns = []string{
		"--sample-rate 0.01 --steps 100 --delta 1e-5", "--dataset-size 1000 --batch-size 10 --epochs 2",
		"--sample-rate 0.5 --steps 1000 --delta 1e-8 --sampling fixed", "--sample-rate 1 --steps 1",
	}
	randSampling = []string{"poisson", "fixed", "fixed", "shuffle"}
	randSeries   = []string{"exact", "magnitudes", "abs"}
	randOrders   = []string{"2,4,8", "1.5,3,64", "1", "x", "2,,3", "20000"}
	randAccount  = []string{"pld", "pld", "rdp", "rdp", "prv"}
	// randFlags maps each flag to the pool its value is drawn from; nil
	// for boolean flags.
	randFlags = map[string][]string{
		"-o": randOuts, "--grads": randNPY, "--theta": randNPY, "--out": randOuts,
		"--set": randSets, "--sigma-w2": randNumbers, "--seed": randNumbers, "--noise": randNoise, "--backend": randBackend,
		"--ir": nil, "--json": nil, "--zzz": nil, "-h": nil, "--": nil,
		"--sigma": randNumbers, "--epsilon": randNumbers, "--sample-rate": randNumbers, "--steps": randNumbers,
		"--delta": randNumbers, "--dataset-size": randNumbers, "--batch-size": randNumbers, "--epochs": randNumbers,
		"--sampling": randSampling, "--series": randSeries, "--orders": randOrders,
		"--accountant": randAccount, "--interval": randNumbers,
	}
	// cmdFlags lists each command's flags.
	cmdFlags = map[string][]string{
		"build":   {"-o"},
		"explain": {"--ir", "--json", "--set"},
		"run":     {"--grads", "--theta", "--out", "--set", "--sigma-w2", "--seed", "--noise", "--backend"},
		"privacy": {
			"--sigma", "--epsilon", "--sample-rate", "--steps", "--delta", "--dataset-size", "--batch-size",
			"--epochs", "--sampling", "--series", "--orders", "--json", "--accountant", "--interval",
		},
	}
	// allFlags are every command's flags and some that none has.
	allFlags = []string{
		"-o", "--grads", "--theta", "--out", "--set", "--sigma-w2", "--seed", "--noise", "--backend", "--ir", "--json", "--zzz", "-h", "--",
		"--sigma", "--epsilon", "--sample-rate", "--steps", "--delta", "--dataset-size", "--batch-size", "--epochs",
		"--sampling", "--series", "--orders", "--accountant", "--interval",
	}
)

// randArgs builds a command line from the vocabulary: a command, then
// files, flags with values and stray values in random order. It is
// weighted so that all three exit statuses are common: commands mostly get
// the number of files they want, and runs mostly get their required flags.
func randArgs(rng *rand.Rand) []string {
	pick := func(pool []string) string { return pool[rng.IntN(len(pool))] }
	cmd := pick(randCommands)
	if rng.IntN(16) == 0 {
		cmd = pick(badCommands)
	}
	args := []string{cmd}
	switch {
	case cmd == "privacy":
		args = append(args, randPrivacyArgs(rng, pick)...)
	case rng.IntN(4) > 0:
		args = append(args, pick(randFiles))
	}
	if cmd == "run" && rng.IntN(4) > 0 {
		args = append(args, "--grads grads.npy", "--theta theta.npy", "--out out.npy", "--noise off")
	}
	for range rng.IntN(5) {
		switch k := rng.IntN(20); {
		case k == 0:
			args = append(args, pick(randFiles))
		case k == 1:
			args = append(args, pick(randSets))
		default:
			args = append(args, randFlag(rng, cmd, pick))
		}
	}
	args = slices.Concat([]string{cmd}, shuffled(rng, args[1:]))
	return strings.Fields(strings.Join(args, " ")) // flags with values are one token
}

// randPrivacyArgs is mostly a subcommand, a run and the --sigma or
// --epsilon it takes.
func randPrivacyArgs(rng *rand.Rand, pick func([]string) string) []string {
	var args []string
	sub := pick(randPrivacySubs)
	if rng.IntN(8) > 0 {
		args = append(args, sub)
	}
	if rng.IntN(4) > 0 {
		args = append(args, pick(randPrivacyRuns))
	}
	if rng.IntN(4) > 0 && sub == "sigma" {
		args = append(args, "--epsilon 2")
	} else if rng.IntN(4) > 0 {
		args = append(args, "--sigma 1.5")
	}
	return args
}

// randFlag is a flag of cmd with its value, or one time in eight any flag
// of the vocabulary.
func randFlag(rng *rand.Rand, cmd string, pick func([]string) string) string {
	names := cmdFlags[cmd]
	if len(names) == 0 || rng.IntN(8) == 0 {
		names = allFlags
	}
	name := pick(names)
	pool := randFlags[name]
	switch {
	case pool == nil && name != "--" && name != "-h":
		return name + pick(randBools)
	case pool == nil:
		return name
	case rng.IntN(3) == 0:
		return name + "=" + pick(pool)
	}
	return name + " " + pick(pool)
}

func shuffled(rng *rand.Rand, s []string) []string {
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// callMain runs Main and turns a panic into a test failure.
func callMain(t *testing.T, args []string) (r result) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("fibergen %q panicked: %v\n%s", args, p, debug.Stack())
		}
	}()
	return runMain(args...)
}

// stderrLine matches each line a failing command may write: a one-line
// message, a DSL diagnostic with its source and caret lines, or the usage.
var stderrLine = regexp.MustCompile(`^(fibergen.*|[^\s:]+:\d+:\d+: .*|\t.*|usage:|  .*)$`)

// checkedFiles is what check prints for the good files among bad ones.
var checkedFiles = regexp.MustCompile(`^([^\n]+: ok\n)+$`)

func TestNoPanic(t *testing.T) {
	dir := fixtureFiles(t)
	t.Chdir(dir) // build without -o writes ./generated
	base := snapshot(t, dir)
	rng := rand.New(rand.NewPCG(11, 12))
	counts := map[int]int{}
	for i := range 400 {
		args := randArgs(rng)
		what := fmt.Sprintf("#%d fibergen %q", i, args)
		r := callMain(t, args)
		counts[r.code]++
		switch r.code {
		case 0:
			if r.stderr != "" {
				t.Errorf("%s succeeded but wrote to stderr:\n%s", what, r.stderr)
			}
			restoreSnapshot(t, dir, base)
			continue
		case 1, 2:
		default:
			t.Fatalf("%s: exit status %d", what, r.code)
		}
		jsonAnswer := slices.Contains(args, "--json") || slices.Contains(args, "--json=true") // explain --json answers errors in JSON too
		if r.stdout != "" && !jsonAnswer && !checkedFiles.MatchString(r.stdout) || r.stderr == "" {
			t.Errorf("%s failed with stdout %q and stderr %q", what, r.stdout, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
			if !stderrLine.MatchString(line) {
				t.Errorf("%s: unexpected stderr line %q", what, line)
			}
		}
		after := snapshot(t, dir)
		if fmt.Sprint(after) != fmt.Sprint(base) {
			t.Errorf("%s failed but changed files under %s", what, filepath.Base(dir))
			checkSnapshot(t, dir, base)
			restoreSnapshot(t, dir, base)
		}
	}
	t.Logf("exit statuses: %v", counts)
	for _, code := range []int{0, 1, 2} {
		if counts[code] < 20 {
			t.Errorf("only %d of the command lines exit with status %d; the generator needs rebalancing", counts[code], code)
		}
	}
}
