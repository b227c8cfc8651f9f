package main

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
)

// startsDSL has a state that starts from g and one that starts from theta.
var startsDSL = filepath.Join("..", "..", "tests", "testdata", "dsl", "starts.dsl")

// TestRunStateOut checks --state-out against the step written in float32,
// one rounding per operation, with m starting from step 0's g and avg from
// theta before step 0, on every backend.
func TestRunStateOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const steps, n = 4, 6
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	wantTheta, wantM, wantAvg := slices.Clone(theta), slices.Clone(grads[:n]), slices.Clone(theta)
	lr := float32(0.1)
	for s := range steps {
		for i := range n {
			g := grads[s*n+i]
			// Each product converted: Go may fuse x*y + z otherwise (arm64).
			wantM[i] = float32(float32(0.75)*wantM[i]) + float32(float32(0.25)*g)
			wantTheta[i] -= float32(lr * wantM[i])
			wantAvg[i] = float32(float32(0.5)*wantAvg[i]) + float32(float32(0.5)*wantTheta[i])
		}
	}
	dir, src := t.TempDir(), startsDSL
	for _, backend := range []string{"go", "cpu", "ptxsim"} {
		th, g, out := runInputs(t, theta, grads, steps)
		m, avg := filepath.Join(dir, backend+"_m.npy"), filepath.Join(dir, backend+"_avg.npy")
		mustRunNoNoise(t, "run", src, "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--backend", backend,
			"--state-out", "m="+m, "--state-out", "avg="+avg)
		for _, c := range []struct {
			what, path string
			want       []float32
		}{{"theta", out, wantTheta}, {"m", m, wantM}, {"avg", avg, wantAvg}} {
			if d := floatbits.Diff(c.want, readNPY(t, c.path).Data); d != "" {
				t.Errorf("%s: %s %s", backend, c.what, d)
			}
		}
	}
}

// TestRunStateOutNoSteps: --state-out of a run of no steps writes the
// buffers as they are (0) and says, for each state that starts from
// another value at step 0, that it has not started; a state that starts
// from its buffer, or a run of steps, says nothing.
func TestRunStateOutNoSteps(t *testing.T) {
	th, g, out := runInputs(t, []float32{1, 2}, nil, 0)
	m := filepath.Join(t.TempDir(), "m.npy")
	r := runMain("run", startsDSL, "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--state-out", "m="+m)
	want := "fibergen run: warning: --state-out m: no step ran, and state m starts at g at step 0: the file holds its buffer before that, 0\n"
	if r.code != 0 || r.stderr != want {
		t.Fatalf("exit %d, stderr %q; want 0 and %q", r.code, r.stderr, want)
	}
	if d := floatbits.Diff([]float32{0, 0}, readNPY(t, m).Data); d != "" {
		t.Errorf("m: %s", d)
	}
	th, g, out = runInputs(t, []float32{1, 2}, []float32{0.5, 0.5}, 1)
	if r := runMain("run", startsDSL, "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--state-out", "m="+m); r.code != 0 || r.stderr != "" {
		t.Errorf("a step run: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
}

// TestExplainStart checks that explain shows what a state starts from, in
// text and in JSON.
func TestExplainStart(t *testing.T) {
	src := startsDSL
	text := mustRun(t, "explain", src).stdout
	for _, want := range []string{"  m          initial g, read at step 0", "  avg        initial theta, read at step 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain does not say %q:\n%s", want, text)
		}
	}
	js := mustRun(t, "explain", src, "--json").stdout
	for _, want := range []string{`"name": "m",`, `"start": "g"`, `"start": "theta"`} {
		if !strings.Contains(js, want) {
			t.Errorf("explain --json does not hold %s:\n%s", want, js)
		}
	}
}
