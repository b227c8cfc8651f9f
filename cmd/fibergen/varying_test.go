package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
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
// test's own recursion: the running mean's is 1/(t+1).
func TestVaryingAttenuation(t *testing.T) {
	var x struct {
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
		want := map[string][]float64{"attenuation_t(mean)": mean, "attenuation_t(l)": ll, "attenuation_t(l)[l,s]": ls, "attenuation_t(l)[s,s]": ss}
		seen := 0
		for _, s := range x.Scalars {
			w := want[s.Name]
			if w == nil {
				continue
			}
			seen++
			for _, at := range s.Steps {
				if d := math.Abs(at.Value - w[at.T]); d > 1e-12*w[at.T] {
					t.Errorf("%v: %s at t = %d is %v, want %v", set.args, s.Name, at.T, at.Value, w[at.T])
				}
				if s.Name == "attenuation_t(mean)" && math.Abs(at.Value*float64(at.T+1)-1) > 1e-12 {
					t.Errorf("%v: the running mean's gain at t = %d is %v, not 1/(t+1)", set.args, at.T, at.Value)
				}
			}
		}
		if seen != len(want) {
			t.Errorf("%v: explain shows %d of the %d covariance scalars", set.args, seen, len(want))
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
