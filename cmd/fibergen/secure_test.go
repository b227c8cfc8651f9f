package main

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/rng"
)

// TestRunNoiseModeSecure: run --noise-mode secure draws N(0, σ_w²) noise on
// the grid of the secure scheme (σ_w = 1: multiples of 2^-8), under a new
// key from the OS each run (two runs differ), says so in one line and shows
// no key; the default mode's noise is off that grid.
func TestRunNoiseModeSecure(t *testing.T) {
	const n = 1 << 14
	theta, grads := make([]float32, n), make([]float32, n)
	flags := []string{"--sigma-w2", "1", "--set", "lr=1", "--noise-mode", "secure"}
	var runs [][]float32
	for range 2 {
		th, g, out := runInputs(t, theta, grads, 1)
		r := runMain(append([]string{"run", optPath("dp_sgd"), "--grads", g, "--theta", th, "--out", out}, flags...)...)
		if r.code != 0 || r.stderr != "fibergen run: secure noise under a key from the operating system, not shown: this run's noise cannot be drawn again\n" {
			t.Fatalf("exit status %d, stderr %q", r.code, r.stderr)
		}
		runs = append(runs, readNPY(t, out).Data)
	}
	z := runs[0]
	var sum, sum2 float64
	for i, x := range z {
		if q := float64(x) * 256; q != math.Round(q) {
			t.Fatalf("coordinate %d: %v is off the secure grid 2^-8·ℤ", i, x)
		}
		sum += float64(x)
		sum2 += float64(x) * float64(x)
	}
	if mean, v := sum/n, sum2/n; math.Abs(mean) > 5/math.Sqrt(n) || math.Abs(v-1) > 5*math.Sqrt(2.0/n) {
		t.Errorf("secure noise mean %v, variance %v; want N(0, 1)", mean, v)
	}
	if slices.Equal(runs[0], runs[1]) {
		t.Error("two secure runs drew the same noise: the key is not new each run")
	}
	philox := runOut(t, "dp_sgd", theta, grads, 1, "--sigma-w2", "1", "--set", "lr=1", "--seed", "1")
	if !slices.ContainsFunc(philox, func(x float32) bool { q := float64(x) * 256; return q != math.Round(q) }) {
		t.Error("the default mode's noise is on the secure grid: --noise-mode secure changed nothing")
	}
}

// TestRunNoiseModeRefused: --seed with --noise-mode secure, and a mode that
// is none, are refused in one line naming the flags, with exit status 2
// and no output written.
func TestRunNoiseModeRefused(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--noise-mode", "secure", "--seed", "7"}, "fibergen run: --seed with --noise-mode secure: secure noise takes its key from the operating system and no seed"},
		{[]string{"--noise-mode", "chacha"}, `fibergen run: --noise-mode "chacha": want philox or secure`},
	} {
		th, g, out := runInputs(t, []float32{1, 2}, []float32{0, 0}, 1)
		r := runMain(append([]string{"run", optPath("dp_sgd"), "--grads", g, "--theta", th, "--out", out, "--sigma-w2", "1"}, c.flags...)...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit status %d, stderr %q; want 2 and one line %q...", c.flags, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: the refused run wrote %s (%v)", c.flags, out, err)
		}
	}
}

// TestBenchNoiseMode: bench --noise-mode times either mode and says which;
// another mode is refused.
func TestBenchNoiseMode(t *testing.T) {
	for _, mode := range []string{"", "philox", "secure"} {
		args := []string{"bench", "--json", "--backend", "go", optPath("dp_sgd"), "--n", "4K", "--steps", "2", "--threads", "1"}
		if mode != "" {
			args = append(args, "--noise-mode", mode)
		}
		r := runMain(args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("--noise-mode %q: exit %d, stderr %q", mode, r.code, r.stderr)
		}
		var got struct {
			NoiseMode string  `json:"noise_mode"`
			Ms        float64 `json:"ms_per_step"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"": "philox"}[mode]; got.NoiseMode != mode && got.NoiseMode != want || !(got.Ms > 0) {
			t.Errorf("--noise-mode %q: noise_mode %q, %v ms per step", mode, got.NoiseMode, got.Ms)
		}
	}
	r := runMain("bench", "--backend", "go", optPath("dp_sgd"), "--n", "4K", "--noise-mode", "off")
	if r.code != 2 || r.stderr != "fibergen bench: --noise-mode \"off\": want philox or secure\n" {
		t.Errorf("--noise-mode off: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestExplainNoiseSchemes: explain names both noise schemes and their
// versions, in text and JSON.
func TestExplainNoiseSchemes(t *testing.T) {
	r := mustRun(t, "explain", optPath("dp_sgd"))
	for _, v := range []string{rng.Version, rng.SecureVersion} {
		if !strings.Contains(r.stdout, v) {
			t.Errorf("explain does not name %s", v)
		}
	}
	var x struct {
		Noise []struct {
			Mode, Version string
			Default       bool
		} `json:"noise"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "explain", "--json", optPath("dp_sgd")).stdout), &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Noise) != 2 || x.Noise[0].Mode != "philox" || x.Noise[0].Version != rng.Version || !x.Noise[0].Default ||
		x.Noise[1].Mode != "secure" || x.Noise[1].Version != rng.SecureVersion || x.Noise[1].Default {
		t.Errorf("explain --json's noise: %+v", x.Noise)
	}
}
