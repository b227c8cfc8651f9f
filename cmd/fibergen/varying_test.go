package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
)

// varyingDSL has a running mean and an alpha-beta tracker whose gains
// follow a host scalar: filters whose coefficients change from step to
// step.
var varyingDSL = filepath.Join("..", "..", "tests", "testdata", "dsl", "varying.dsl")

// varyingCovariance is the test's own transcription of the tracker's
// covariance recursion Σ_t = M_t Σ_{t−1} M_tᵀ + b_t b_tᵀ over (l, s), with
// l' = b (l + s) + (1 − b) g and s' = s + c (g − l − s), c = (1 − b)²/2,
// b = β min((t+1)/warmup, 1), and of the running mean's variance.
func varyingCovariance(beta, warmup float64, steps int) (mean, ll, ls, ss []float64) {
	var m, sll, sls, sss float64
	for t := range steps {
		b := beta * math.Min(float64(t+1)/warmup, 1)
		a, c := 1-b, (1-b)*(1-b)/2
		m00, m01, m10, m11 := b, b, -c, 1-c
		nll := m00*m00*sll + 2*m00*m01*sls + m01*m01*sss + a*a
		nls := m00*m10*sll + (m00*m11+m01*m10)*sls + m01*m11*sss + a*c
		nss := m10*m10*sll + 2*m10*m11*sls + m11*m11*sss + c*c
		sll, sls, sss = nll, nls, nss
		k := 1 / float64(t+1)
		m = (1-k)*(1-k)*m + k*k
		mean, ll, ls, ss = append(mean, m), append(ll, sll), append(ls, sls), append(ss, sss)
	}
	return mean, ll, ls, ss
}

// TestVaryingAttenuation checks the finite-time gains of time-varying
// filters, as explain reports the scalars that hold them, against the
// test's own recursion: the running mean's is 1/(t+1); and a host block's
// sum of them, which reads each at its step.
func TestVaryingAttenuation(t *testing.T) {
	var x struct {
		Attenuation map[string]struct {
			Value *float64
			Limit string
		}
		Scalars []struct {
			Name  string
			Steps []struct {
				T     int
				Value float64
			}
		}
	}
	for _, set := range []struct {
		args         []string
		beta, warmup float64
	}{{nil, 0.9, 10}, {[]string{"--set", "beta=0.5", "--set", "warmup=300"}, 0.5, 300}} {
		out := mustRun(t, append([]string{"explain", varyingDSL, "--json"}, set.args...)...).stdout
		if err := json.Unmarshal([]byte(out), &x); err != nil {
			t.Fatal(err)
		}
		mean, ll, ls, ss := varyingCovariance(set.beta, set.warmup, 10001)
		acc := make([]float64, len(ll)) // the host block's sum of sigma_w2 * attenuation_t(l), at explain's sigma_w2 = 1
		for i := range ll {
			acc[i] = ll[i]
			if i > 0 {
				acc[i] += acc[i-1]
			}
		}
		want := map[string][]float64{"attenuation_t(avg)": mean, "attenuation_t(l)": ll, "attenuation_t(l)[l,s]": ls, "attenuation_t(l)[s,s]": ss, "acc": acc}
		seen := 0
		for _, s := range x.Scalars {
			if s.Name == "attenuation_t(s)" {
				t.Errorf("%v: attenuation_t(s) has scalars of its own; s's filter is l's, whose covariance holds it", set.args)
			}
			w := want[s.Name]
			if w == nil {
				continue
			}
			seen++
			for _, at := range s.Steps {
				if d := math.Abs(at.Value - w[at.T]); d > 1e-12*w[at.T] {
					t.Errorf("%v: %s at t = %d is %v, want %v", set.args, s.Name, at.T, at.Value, w[at.T])
				}
				if s.Name == "attenuation_t(avg)" && math.Abs(at.Value*float64(at.T+1)-1) > 1e-12 {
					t.Errorf("%v: the running mean's gain at t = %d is %v, not 1/(t+1)", set.args, at.T, at.Value)
				}
			}
		}
		if seen != len(want) {
			t.Errorf("%v: explain shows %d of the %d scalars", set.args, seen, len(want))
		}
		if a := x.Attenuation["l"]; a.Value == nil || a.Limit == "" || math.Abs(*a.Value-ll[len(ll)-1]) > 1e-12 {
			t.Errorf("%v: the tracker's steady attenuation is %+v, want a limit of %v, where attenuation_t(l) ends", set.args, a, ll[len(ll)-1])
		}
	}
}

// TestRunVaryingBackends checks that a step reading attenuation_t of
// time-varying filters gives the same bits on every backend, with noise.
func TestRunVaryingBackends(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const steps, n = 5, 37
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	var first []float32
	for _, backend := range []string{"go", "cpu", "ptxsim"} {
		th, g, out := runInputs(t, theta, grads, steps)
		mustRun(t, "run", varyingDSL, "--grads", g, "--theta", th, "--out", out, "--backend", backend, "--seed", "4", "--sigma-w2", "0.5")
		got := readNPY(t, out).Data
		if first == nil {
			first = got
			continue
		}
		if d := floatbits.Diff(first, got); d != "" {
			t.Errorf("%s against go: %s", backend, d)
		}
	}
}

// scheduleDSL is tests/testdata/schedule.dsl (shared with the generated
// package's test) with its default warmup: unstable from the step where
// b > 1 when warmup is small.
func scheduleDSL(t *testing.T, warmup string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "tests", "testdata", "schedule.dsl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Replace(src, []byte("hyper warmup = 1e9"), []byte("hyper warmup = "+warmup), 1)
}

// TestVaryingUnstable checks that a time-varying filter that grows at a
// step of its schedule is refused with the step and the region: at the
// declaration of its state when the defaults do it within the first
// steps, and by the runtime before the step when a setting does; nothing
// is written either way.
func TestVaryingUnstable(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.dsl", scheduleDSL(t, "100"))
	r := runMain("build", bad, "-o", filepath.Join(dir, "out"))
	want := `bad.dsl:9:7: at the defaults: the filter of state m is unstable at step 51 (b=1.01): its spectral radius there is 1.01, above 1, so m grows (it is stable where 1 - b > 0 and 1 + b > 0)`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("build: exit %d, stderr %q, want 1 and %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("build wrote %s despite the error (%v)", filepath.Join(dir, "out"), err)
	}

	good := writeFile(t, dir, "good.dsl", scheduleDSL(t, "1e9"))
	rng := rand.New(rand.NewPCG(1, 2))
	th, g, out := runInputs(t, randFloats(rng, 8), randFloats(rng, 5*8), 5)
	r = runMain("run", good, "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--set", "warmup=4")
	want = `step 3 refused, nothing changed: the filter of state m is unstable at step 3 (b=1.25)`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("run: exit %d, stderr %q, want 1 and %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("run wrote %s despite the error (%v)", out, err)
	}
	mustRun(t, "run", good, "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--set", "warmup=4", "--allow-unstable")
}

// TestHostReadCycle checks that a host block whose scalar is computed from
// attenuation_t of a filter whose coefficients read that scalar is
// refused at the call.
func TestHostReadCycle(t *testing.T) {
	src := `optimizer cycle
hyper lr = 0.1 in [0, inf)
scalar b = 0
state m = 0
step {
	host {
		b = 0.5 * attenuation_t(m)
	}
	m = b * m + (1 - b) * g
	theta = theta - lr * m
}
`
	path := writeFile(t, t.TempDir(), "cycle.dsl", []byte(src))
	r := runMain("check", path)
	want := `cycle.dsl:7:13: attenuation_t(m) in the host block is its value at this step`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("check: exit %d, stderr %q, want 1 and %q", r.code, r.stderr, want)
	}
}
