package main

import (
	"github.com/fibergen/fibergen/internal/floatbits"

	"math"
	"path/filepath"
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
// that says what happens — the run stops, nothing is written — and not
// what the runtime tells a trainer that goes on ("step skipped, nothing
// changed"); a previous output stays as it was. Per-example gradients
// (--example-grads) stop it the same way.
func TestRunRefusesNonFiniteGradient(t *testing.T) {
	dir := t.TempDir()
	theta := writeNPY(t, dir, "theta.npy", []int{3}, []float32{1, -2, 3})
	grads := writeNPY(t, dir, "grads.npy", []int{2, 3}, []float32{0.5, 0.25, 1, 0.1, float32(math.Inf(-1)), 0.3})
	examples := writeNPY(t, dir, "examples.npy", []int{3, 2, 3}, []float32{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, float32(math.NaN()), 6, 1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		name  string
		flags []string
		msg   string
	}{
		{"grads", []string{"--grads", grads, "--noise", "off"},
			"fibergen run: step 1 of steps 0..1: the gradient of theta[1] is -Inf: the run stops there, and no output file was written\n"},
		{"example grads", []string{"--example-grads", examples, "--clip", "1", "--noise", "off"},
			"fibergen run: step 1 of steps 0..2: example 1 has a NaN or ±Inf gradient entry (or one whose square overflows float32): the run stops there, and no output file was written\n"},
	} {
		for _, backend := range []string{"go", "cpu"} {
			out := filepath.Join(dir, "out.npy")
			old := writeNPY(t, dir, "out.npy", []int{1}, []float32{7})
			r := runMain(slices.Concat([]string{"run", optPath("dp_sgd"), "--theta", theta, "--out", out, "--backend", backend}, c.flags)...)
			msg := strings.TrimPrefix(r.stderr, "fibergen run: warning: --noise off: the steps add no DP noise, so the output is not private (ε = ∞)\n")
			if r.code != 1 || msg != c.msg {
				t.Errorf("%s, --backend %s: exit status %d, stderr %q; want exit 1 and %q", c.name, backend, r.code, r.stderr, c.msg)
			}
			if got := readNPY(t, old).Data; !slices.Equal(got, []float32{7}) {
				t.Errorf("%s, --backend %s: the run wrote %s: %v", c.name, backend, out, got)
			}
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
