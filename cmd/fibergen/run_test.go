package main

import (
	"github.com/fibergen/fibergen/internal/floatbits"

	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRunDiagnostics checks the lines --diagnostics prints at the ends of
// the scale — a floor above every corrected second moment clamps every
// coordinate (clamp_mass 1), a zero floor without noise clamps none (0) —
// and that the flag leaves the output file alone.
func TestRunDiagnostics(t *testing.T) {
	theta, grads := []float32{1, -2, 3}, []float32{0.5, 0.25, -1, 0.1, 0.2, 0.3}
	for _, c := range []struct {
		set, want string
	}{
		{"eps_v=1", "step 0: clamp_mass = 1\nstep 1: clamp_mass = 1\n"},
		{"eps_v=0", "step 0: clamp_mass = 0\nstep 1: clamp_mass = 0\n"},
	} {
		th, g, out := runInputs(t, theta, grads, 2)
		r := mustRun(t, "run", optPath("fiber"), "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--set", c.set, "--diagnostics")
		if r.stdout != c.want {
			t.Errorf("--set %s --diagnostics printed\n%s\nwant\n%s", c.set, r.stdout, c.want)
		}
		want := runOut(t, "fiber", theta, grads, 2, "--noise", "off", "--set", c.set)
		if got := readNPY(t, out).Data; !slices.Equal(got, want) {
			t.Errorf("--set %s: theta %v with --diagnostics, %v without", c.set, got, want)
		}
	}
}

// TestRunDiagnosticsUndeclared checks the error for an optimizer that
// declares no clamp_mass.
func TestRunDiagnosticsUndeclared(t *testing.T) {
	th, g, out := runInputs(t, []float32{1, 2}, []float32{1, 1}, 1)
	r := runMain("run", optPath("dp_sgd"), "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--diagnostics")
	if r.code != 1 || !strings.Contains(r.stderr, "--diagnostics: dp_sgd declares no diagnostic clamp_mass") {
		t.Errorf("exit status %d, stderr %q", r.code, r.stderr)
	}
}

// TestRunRefusesNonFiniteGradient checks that a NaN or ±Inf gradient stops
// the run with an error naming the step and the entry, on both backends,
// and writes nothing.
func TestRunRefusesNonFiniteGradient(t *testing.T) {
	for _, backend := range []string{"go", "cpu"} {
		grads := []float32{0.5, 0.25, 1, 0.1, float32(math.Inf(-1)), 0.3}
		th, g, out := runInputs(t, []float32{1, -2, 3}, grads, 2)
		r := runMain("run", optPath("fiber"), "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--backend", backend)
		if r.code != 1 || !strings.Contains(r.stderr, "step 1: runtime: gradient of theta[1] is -Inf") {
			t.Errorf("--backend %s: exit status %d, stderr %q", backend, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--backend %s: the run wrote %s", backend, out)
		}
	}
}

// TestRunGroups: --group gives coordinates hypers of their own (weight
// decay off for a "bias"): they step, noise included, exactly as in a run
// with those hypers everywhere, the rest as in the run without the group.
func TestRunGroups(t *testing.T) {
	theta := []float32{1, -2, 3, 0.5, -0.25, 2}
	grads := []float32{0.5, 0.25, -1, 0.1, 0.2, 0.3, -0.4, 0.6, 0.1, -0.2, 0.3, 0.05, 0.7, -0.1, 0.2, 0.9, -0.3, 0.4}
	for _, backend := range []string{"go", "cpu"} {
		common := []string{"--sigma-w2", "0.01", "--seed", "5", "--set", "lr=0.01", "--backend", backend}
		decayed := runOut(t, "fiber", theta, grads, 3, append(common, "--set", "wd=0.5")...)
		plain := runOut(t, "fiber", theta, grads, 3, append(common, "--set", "wd=0")...)
		grouped := runOut(t, "fiber", theta, grads, 3, append(common, "--set", "wd=0.5", "--group", "1:3:wd=0", "--group", "5:6:wd=0")...)
		want := slices.Concat(decayed[:1], plain[1:3], decayed[3:5], plain[5:])
		if !floatbits.Equal(grouped, want) {
			t.Errorf("--backend %s: %v, want %v", backend, grouped, want)
		}
		if floatbits.Equal(decayed, plain) {
			t.Fatal("wd changes nothing: the test cannot tell the groups apart")
		}
	}
}
