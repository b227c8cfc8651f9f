package main

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
)

// TestReduceNonFinite checks that a step whose host value is not finite
// for a tensor (a division by the norm of a zero gradient) is refused
// naming the tensor and the value, with no output written.
func TestReduceNonFinite(t *testing.T) {
	src := "../../tests/testdata/dsl/unguarded.dsl"
	theta, grads := randFloats(rand.New(rand.NewPCG(1, 2)), 5), make([]float32, 5)
	th, g, out := runInputs(t, theta, grads, 1)
	for _, backend := range []string{"go", "cpu"} {
		r := runMain("run", src, "--grads", g, "--theta", th, "--out", out, "--backend", backend, "--noise", "off")
		want := "the host value S0 = lr / sqrt(sum(r0)) is +Inf: the step would spoil the tensor, so it did not run"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want an error with %q", backend, r.code, r.stderr, want)
		}
		if exists(out) {
			t.Errorf("%s: %s written after the refused step", backend, filepath.Base(out))
		}
	}
}

// nestedDSL reduces a value that reads another reduction.
const nestedDSL = `optimizer nested
hyper lr = 0.1 in [0, inf)
step {
	u = g / norm(g)
	theta = theta - lr * norm(u) * g
}
`

// uniformStateDSL reduces a state that holds a per-step value where the
// reduction reads it (found by FuzzCompile, which lowering once failed
// on with an internal error).
const uniformStateDSL = `optimizer flat
hyper lr = 0.1 in [0, inf)
state v = 0
step {
	v = lr
	theta = theta - max(v) * g
}
`

// TestReduceRefused checks that a reduction of a value that reads another,
// or of a per-step value a state holds, is refused at the call, with
// nothing written.
func TestReduceRefused(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{nestedDSL, "x.dsl:5:23: norm reduces u, which reads a norm, sum, mean, max or min: fibergen runs one reduction pass before the step, so a reduction cannot read another"},
		{uniformStateDSL, "x.dsl:6:18: max reduces v, which holds a per-step value here, the same at every coordinate: a reduction is of a per-coordinate value"},
	} {
		dir := t.TempDir()
		src := writeFile(t, dir, "x.dsl", []byte(tt.src))
		r := runMain("build", src, "-o", filepath.Join(dir, "out"))
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, tt.want)
		}
		if exists(filepath.Join(dir, "out")) {
			t.Error("build wrote output for a file with errors")
		}
	}
}

// TestRunTensors checks --tensors: lamb over theta as tensors of 3 and 5
// coordinates is, on every backend, lamb over each tensor alone (the
// gradients privatized, so no noise tells the offsets apart), and not lamb
// over the one tensor of 8.
func TestRunTensors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const steps, n = 3, 8
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	part := func(lo, hi int) (th, g []float32) {
		for s := range steps {
			g = append(g, grads[s*n+lo:s*n+hi]...)
		}
		return theta[lo:hi], g
	}
	th0, g0 := part(0, 3)
	th1, g1 := part(3, n)
	for _, backend := range []string{"go", "cpu", "ptxsim"} {
		flags := []string{"--backend", backend, "--noise", "off"}
		want := append(runOut(t, "lamb", th0, g0, steps, flags...), runOut(t, "lamb", th1, g1, steps, flags...)...)
		got := runOut(t, "lamb", theta, grads, steps, append(flags, "--tensors", "3,5")...)
		if !floatbits.Equal(got, want) {
			t.Errorf("%s: --tensors 3,5 gives %v, each tensor alone %v", backend, got, want)
		}
		if whole := runOut(t, "lamb", theta, grads, steps, flags...); floatbits.Equal(whole, want) {
			t.Errorf("%s: one tensor of 8 steps as two: the test cannot tell them apart", backend)
		}
	}
}

// TestLinesBuildAndRun: build refuses states per row or column, which no
// target compiles yet, at each state and reduction, writing nothing, and
// so does run on the cpu backend; run on the go backend runs them, a
// --tensors shape giving the rows and columns, and writes the line states
// --state-out asks for; check takes the file.
func TestLinesBuildAndRun(t *testing.T) {
	src := filepath.Join("..", "..", "dsl", "testdata", "parse", "lines.dsl")
	if r := runMain("check", src); r.code != 0 {
		t.Fatalf("check: exit %d, stderr %q", r.code, r.stderr)
	}
	dir := t.TempDir()
	th, g, out := runInputs(t, []float32{1, 2, 3, 4, 5, 6}, []float32{0.1, 0.2, 0.3, -0.1, 0.5, 0.4}, 1)
	run := []string{"run", src, "--theta", th, "--grads", g, "--out", out, "--noise", "off", "--tensors", "2x3"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"build", src, "-o", filepath.Join(dir, "out")}, []string{"lines.dsl:8:9: state r is per row: no target compiles states per row or per column yet: the reference runs it (fibergen run --backend go --tensors RxC; the PyTorch binding on the CPU", "lines.dsl:12:32: rowmean:"}},
		{append(run, "--backend", "cpu"), []string{"fibergen run: runtime: lines has states per row or per column, which only Backend go (the reference) runs yet"}},
	} {
		r := runMain(c.args...)
		for _, want := range c.want {
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: exit %d, stderr %q; want %q", c.args[0], r.code, r.stderr, want)
			}
		}
	}
	if exists(filepath.Join(dir, "out")) || exists(out) {
		t.Error("a refused build or run wrote output")
	}
	rOut, cOut := filepath.Join(dir, "r.npy"), filepath.Join(dir, "c.npy")
	if r := runMain(append(run, "--state-out", "r="+rOut, "--state-out", "c="+cOut)...); r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Fatalf("run --backend go: exit %d, stderr %q", r.code, r.stderr)
	}
	flat := append(slices.Clone(run[:len(run)-1]), "6")
	if r := runMain(flat...); r.code != 0 || !strings.Contains(r.stderr, "fibergen run: warning: lines has states per row or per column (or row and column sums), and no tensor has a shape: each is one row") {
		t.Errorf("run --tensors 6: exit %d, stderr %q; want a warning that each tensor is one row", r.code, r.stderr)
	}
	for path, n := range map[string]int{out: 6, rOut: 2, cOut: 3} {
		if a := readNPY(t, path); len(a.Data) != n {
			t.Errorf("%s holds %d values, want %d", path, len(a.Data), n)
		}
	}
}
