package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unguardedDSL divides by a norm, on the host, that is 0 where the
// gradient is.
const unguardedDSL = `optimizer unguarded
hyper lr = 0.1 in [0, inf)
step {
	theta = theta - lr / norm(g) * g
}
`

// TestReduceNonFinite checks that a step whose host value is not finite
// for a tensor (a division by the norm of a zero gradient) is refused
// naming the tensor and the value, with no output written.
func TestReduceNonFinite(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "unguarded.dsl", []byte(unguardedDSL))
	theta, grads := randFloats(rand.New(rand.NewPCG(1, 2)), 5), make([]float32, 5)
	th, g, out := runInputs(t, theta, grads, 1)
	for _, backend := range []string{"go", "cpu"} {
		r := runMain("run", src, "--grads", g, "--theta", th, "--out", out, "--backend", backend, "--noise", "off")
		want := "the host value S0 = lr / sqrt(sum(r0)) is +Inf: the step would spoil the tensor, so it did not run"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want an error with %q", backend, r.code, r.stderr, want)
		}
		if _, err := os.Stat(out); err == nil {
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

// TestReduceNested checks that a reduction of a value that reads another
// is refused at the call, with nothing written.
func TestReduceNested(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "nested.dsl", []byte(nestedDSL))
	r := runMain("build", src, "-o", filepath.Join(dir, "out"))
	want := "nested.dsl:5:23: norm reduces u, which reads a norm, sum or mean: fibergen runs one reduction pass before the step, so a reduction cannot read another"
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("build wrote output for a file with errors")
	}
}
