package main

import (
	"github.com/fibergen/fibergen/internal/floatbits"

	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// noNoiseWarning is the line a run prints when it is told to add no DP
// noise to gradients it does not take as privatized.
var noNoiseWarning = regexp.MustCompile(`^fibergen run: warning: (--noise off|--noise-multiplier 0|--sigma-w2 0): the steps add no DP noise, so the output is not private \(ε = ∞\)\n`)

// mustRunNoNoise is mustRun for a run that may be told to add no noise:
// its stderr is empty or that warning alone.
func mustRunNoNoise(t *testing.T, args ...string) result {
	t.Helper()
	r := runMain(args...)
	if r.code != 0 || noNoiseWarning.ReplaceAllString(r.stderr, "") != "" {
		t.Fatalf("fibergen %s: exit status %d, stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// TestRunNoNoiseWarning: a run told explicitly to add no noise runs and
// says, in one line, that its output is not private; a run with noise, or
// on gradients privatized already (--grads with --noise off), says nothing
// of it. --noise off with --example-grads is --noise-multiplier 0.
func TestRunNoNoiseWarning(t *testing.T) {
	dir := fixtureFiles(t)
	grads := []string{"--grads", filepath.Join(dir, "grads.npy")}
	examples := []string{"--example-grads", filepath.Join(dir, "examples.npy"), "--clip", "1"}
	cases := []struct {
		name  string
		flags []string
		warn  string // the flag the warning names; "": no warning
	}{
		{"--noise-multiplier 0", append(slices.Clone(examples), "--noise-multiplier", "0"), "--noise-multiplier 0"},
		{"--noise off with --example-grads", append(slices.Clone(examples), "--noise", "off"), "--noise off"},
		{"--sigma-w2 0", append(slices.Clone(grads), "--sigma-w2", "0"), "--sigma-w2 0"},
		{"--sigma-w2 0 --noise on", append(slices.Clone(grads), "--sigma-w2", "0", "--noise", "on"), "--sigma-w2 0"},
		{"--noise off with --grads", append(slices.Clone(grads), "--noise", "off"), ""},
		{"--noise off --sigma-w2 0 with --grads", append(slices.Clone(grads), "--noise", "off", "--sigma-w2", "0"), ""},
		{"--sigma-w2 1", append(slices.Clone(grads), "--sigma-w2", "1", "--seed", "1"), ""},
		{"--noise-multiplier 1", append(slices.Clone(examples), "--noise-multiplier", "1", "--seed", "1"), ""},
	}
	outs := map[string][]float32{}
	for _, c := range cases {
		out := filepath.Join(dir, "out.npy")
		args := append([]string{"run", optPath("dp_sgd"), "--theta", filepath.Join(dir, "theta.npy"), "--out", out}, c.flags...)
		r := runMain(args...)
		want := ""
		if c.warn != "" {
			want = "fibergen run: warning: " + c.warn + ": the steps add no DP noise, so the output is not private (ε = ∞)\n"
		}
		if r.code != 0 || r.stderr != want || r.stdout != "" {
			t.Errorf("%s: exit status %d, stdout %q, stderr %q; want 0 and %q", c.name, r.code, r.stdout, r.stderr, want)
			continue
		}
		outs[c.name] = readNPY(t, out).Data
	}
	if a, b := outs["--noise-multiplier 0"], outs["--noise off with --example-grads"]; a == nil || !floatbits.Equal(a, b) {
		t.Errorf("--noise off gave %v, --noise-multiplier 0 %v; want the same bits", b, a)
	}
}
