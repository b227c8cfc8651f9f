package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exampleRun writes theta [n] and per-example gradients [T, B, n] (and the
// look-ahead ones when look is not nil), runs fibergen run in per-example
// mode with flags and returns theta, the clipped means and the look-ahead
// point it wrote.
func exampleRun(t *testing.T, name string, theta, cur, look []float32, steps, batch int, flags ...string) (out, clipped, ahead []float32) {
	t.Helper()
	dir := t.TempDir()
	n := len(theta)
	args := []string{"run", optPath(name), "--theta", writeNPY(t, dir, "theta.npy", []int{n}, theta),
		"--example-grads", writeNPY(t, dir, "cur.npy", []int{steps, batch, n}, cur),
		"--out", filepath.Join(dir, "out.npy"), "--clipped-out", filepath.Join(dir, "clipped.npy")}
	if look != nil {
		args = append(args, "--lookahead-grads", writeNPY(t, dir, "look.npy", []int{steps, batch, n}, look),
			"--lookahead-out", filepath.Join(dir, "ahead.npy"))
	}
	mustRunNoNoise(t, append(args, flags...)...)
	out, clipped = readNPY(t, filepath.Join(dir, "out.npy")).Data, readNPY(t, filepath.Join(dir, "clipped.npy")).Data
	if look != nil {
		ahead = readNPY(t, filepath.Join(dir, "ahead.npy")).Data
	}
	return out, clipped, ahead
}

// TestRunExampleGradsSGD clips by hand-made examples: (3, 4) has norm 5 and
// is scaled by C/5 = 0.2 to (0.6, 0.8); (0.3, 0.4) is below C = 1 and kept;
// (0, 0) has norm 0 and is kept. Their mean over B = 3 is (0.3, 0.4); DP-SGD
// without noise then moves theta by −lr times it. Both backends agree to
// the bit.
func TestRunExampleGradsSGD(t *testing.T) {
	cur := []float32{3, 4, 0.3, 0.4, 0, 0}
	var prev []float32
	for _, backend := range []string{"go", "cpu"} {
		out, clipped, _ := exampleRun(t, "dp_sgd", []float32{1, 2}, cur, nil, 1, 3,
			"--clip", "1", "--noise-multiplier", "0", "--set", "lr=0.5", "--backend", backend)
		for i, want := range []float64{0.3, 0.4} {
			if math.Abs(float64(clipped[i])-want) > 1e-7 {
				t.Errorf("%s: clipped[%d] = %v, want %v", backend, i, clipped[i], want)
			}
			if th := []float64{1, 2}[i] - 0.5*want; math.Abs(float64(out[i])-th) > 1e-6 {
				t.Errorf("%s: theta[%d] = %v, want %v", backend, i, out[i], th)
			}
		}
		if prev != nil && !slices.Equal(prev, append(out, clipped...)) {
			t.Errorf("cpu %v, go %v", append(out, clipped...), prev)
		}
		prev = append(out, clipped...)
	}
}

// TestRunExampleGradsTwoPoint mixes two points for fiber: with kappa = 0.5
// and gamma = 1, a = (1 − κ)/(κγ) = 1, so u is the look-ahead gradient
// alone; with gamma = 2, a = 0.5 and u is the average of the two.
func TestRunExampleGradsTwoPoint(t *testing.T) {
	cur, look := []float32{0, 0.5}, []float32{0.2, 0.1}
	tests := []struct {
		gamma string
		want  []float64
	}{
		{"1", []float64{0.2, 0.1}},
		{"2", []float64{0.1, 0.3}},
	}
	for _, tt := range tests {
		out, clipped, ahead := exampleRun(t, "fiber", []float32{1, -1}, cur, look, 1, 1,
			"--clip", "10", "--noise-multiplier", "0", "--set", "kappa=0.5", "--set", "gamma="+tt.gamma)
		for i, want := range tt.want {
			if math.Abs(float64(clipped[i])-want) > 1e-7 {
				t.Errorf("gamma %s: clipped[%d] = %v, want %v", tt.gamma, i, clipped[i], want)
			}
		}
		g := float32(2)
		if tt.gamma == "1" {
			g = 1
		}
		theta0 := []float32{1, -1}
		for i := range out {
			if want := out[i] + float32(g*(out[i]-theta0[i])); ahead[i] != want {
				t.Errorf("gamma %s: lookahead[%d] = %v, want %v", tt.gamma, i, ahead[i], want)
			}
		}
	}
}

// TestRunExampleGradsDiagnostics checks --diagnostics in the per-example
// mode: a huge eps_v puts every coordinate on the floor.
func TestRunExampleGradsDiagnostics(t *testing.T) {
	dir := t.TempDir()
	r := mustRunNoNoise(t, "run", optPath("dp_adambc"), "--theta", writeNPY(t, dir, "theta.npy", []int{2}, []float32{1, 2}),
		"--example-grads", writeNPY(t, dir, "cur.npy", []int{2, 1, 2}, []float32{0.5, -1, 2, 0.25}),
		"--clip", "1", "--noise-multiplier", "0", "--set", "eps_v=1", "--diagnostics", "--out", filepath.Join(dir, "out.npy"))
	if want := "step 0: clamp_mass = 1\nstep 1: clamp_mass = 1\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
}

// TestRunOutputModes: the clipped means (not private) are made readable by
// their owner alone; every output keeps the narrower mode of a file it
// replaces.
func TestRunOutputModes(t *testing.T) {
	for _, c := range []struct {
		name             string
		old              os.FileMode // of both outputs; 0: none
		out, clippedWant os.FileMode
	}{
		{"new files", 0, 0o644, 0o600},
		{"replacing private files", 0o600, 0o600, 0o600},
		{"replacing readable files", 0o644, 0o644, 0o600},
		{"replacing group-readable files", 0o640, 0o640, 0o600},
	} {
		dir := t.TempDir()
		out, clipped := filepath.Join(dir, "out.npy"), filepath.Join(dir, "clipped.npy")
		if c.old != 0 {
			for _, p := range []string{out, clipped} {
				writeNPY(t, dir, filepath.Base(p), []int{1}, []float32{7})
				if err := os.Chmod(p, c.old); err != nil {
					t.Fatal(err)
				}
			}
		}
		mustRunNoNoise(t, "run", optPath("dp_sgd"), "--theta", writeNPY(t, dir, "theta.npy", []int{2}, []float32{1, 2}),
			"--example-grads", writeNPY(t, dir, "cur.npy", []int{1, 1, 2}, []float32{0.5, -1}), "--clip", "1", "--noise", "off",
			"--out", out, "--clipped-out", clipped)
		for _, f := range []struct {
			path string
			want os.FileMode
		}{{out, c.out}, {clipped, c.clippedWant}} {
			if fi, err := os.Stat(f.path); err != nil || fi.Mode().Perm() != f.want {
				t.Errorf("%s: %s has mode %v (%v), want %v", c.name, filepath.Base(f.path), fi.Mode().Perm(), err, f.want)
			}
		}
	}
}

// TestRunClampWarning: fiber on 60 steps of gradients that the noise
// dominates warns once on stderr, with the flag that turns it off, and
// --no-clamp-warning changes nothing but that.
func TestRunClampWarning(t *testing.T) {
	const steps, n = 60, 64
	dir := t.TempDir()
	grads := make([]float32, steps*n)
	for i := range grads {
		grads[i] = float32(i%7-3) * 1e-5
	}
	args := []string{"run", optPath("fiber"), "--theta", writeNPY(t, dir, "theta.npy", []int{n}, make([]float32, n)),
		"--grads", writeNPY(t, dir, "grads.npy", []int{steps, n}, grads), "--sigma-w2", "0.01", "--seed", "1"}
	var outs [][]float32
	for _, quiet := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("out%v.npy", quiet))
		a := append(slices.Clone(args), "--out", out)
		if quiet {
			a = append(a, "--no-clamp-warning")
		}
		r := runMain(a...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", a, r.code, r.stderr)
		}
		warned := strings.Count(r.stderr, "fibergen run: warning: fiber: clamp_mass stayed above 0.2 for 50 steps")
		if want := map[bool]int{false: 1, true: 0}[quiet]; warned != want || quiet == strings.Contains(r.stderr, "--no-clamp-warning turns this warning off") {
			t.Errorf("--no-clamp-warning %v: stderr %q, want %d warnings", quiet, r.stderr, want)
		}
		outs = append(outs, readNPY(t, out).Data)
	}
	if !slices.Equal(outs[0], outs[1]) {
		t.Error("--no-clamp-warning changed the output")
	}
}
