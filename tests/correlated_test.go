package tests

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fibergen/fibergen/corrnoise"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
)

// noiseProbe steps θ by −g, so that from θ = 0 and a zero clipped mean a
// step leaves θ = −σ_w·w_t exactly: the noise the kernel drew.
const noiseProbe = `optimizer noise_probe
hyper decay = 0.875 in [0, 0.88]
noise {
	buffer s1
	buffer s2
	mix = 0.0434 * s1 + 0.46 * s2
	w = z - mix
	s1 = decay * s1 + z
	s2 = 0.23 * s2 + z
}
step {
	theta = theta - g
}
`

// TestNoiseCoefficientsMatchKernel checks the Toeplitz coefficients the
// compiler derives (ir.Func.NoiseCoefficients) against the noise the step
// draws: w_t from the interpreter, which the kernels match bit for bit
// (TestCorrelatedBackendsIdentical), against Σ_s c_{t−s} z_s in float64,
// z_s the draws of rng.Normal, at two settings of the filter's hyper.
func TestNoiseCoefficientsMatchKernel(t *testing.T) {
	u := mustCompile(t, "noise_probe.dsl", []byte(noiseProbe))
	p, err := interp.New(u.Func)
	if err != nil {
		t.Fatal(err)
	}
	const n, steps, seed = 16, 40, 77
	for _, decay := range []float64{0.875, 0.25} {
		h := []float64{decay}
		c := u.Func.NoiseCoefficients(h, steps)
		// The filter that runs: its entries are float32, as the kernel takes them.
		if want := -float64(float32(0.0434)) - float64(float32(0.46)); c[0] != 1 || c[1] != want {
			t.Errorf("decay %v: c_0, c_1 = %v, %v, want 1 and h·b = -0.0434 - 0.46 in float32, %v", decay, c[0], c[1], want)
		}
		states := [][]float32{make([]float32, n), make([]float32, n)}
		for step := range steps {
			theta := make([]float32, n)
			nz := &interp.Noise{Stream: rng.Stream{Mode: rng.Philox, Seed: seed, Step: uint32(step)}, SigmaW: 1}
			if err := p.Step(p.HostScalars(h, step, 1), nz, theta, make([]float32, n), states); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				want, scale := 0.0, 0.0
				for s := 0; s <= step; s++ {
					term := c[step-s] * float64(rng.Normal(seed, uint32(s), rng.GradientSite, uint64(i)))
					want, scale = want+term, scale+math.Abs(term)
				}
				if got := -float64(theta[i]); math.Abs(got-want) > 1e-5*(1+scale) {
					t.Fatalf("decay %v, step %d, coordinate %d: w = %v, want Σ c_k z_(t-k) = %v", decay, step, i, got, want)
				}
			}
		}
	}
}

// TestStrategyCoefficients checks the strategy the accountant is told
// (ir.Func.StrategyCoefficients, the impulse response of the inverse
// system) against the power-series inverse of the noise filter's
// coefficients, at the fixture's settings.
func TestStrategyCoefficients(t *testing.T) {
	u := mustCompileFile(t, repoPath("tests", "testdata", "dsl", "blt.dsl"))
	for _, set := range [][]float64{{0.1, 0.5, 0.875}, {0.1, 0.5, 0}} {
		want, err := corrnoise.Inverse(u.Func.NoiseCoefficients(set, 500))
		if err != nil {
			t.Fatal(err)
		}
		got := u.Func.StrategyCoefficients(set, 500)
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-12*math.Abs(want[0]) {
				t.Fatalf("hypers %v: strategy coefficient %d = %v, the inverse series %v", set, k, got[k], want[k])
			}
		}
	}
}

// TestManifestKeepsNoiseFilter checks the manifest's noise_filter: the
// filter's and the strategy's leading coefficients at the default hypers,
// and none for an optimizer without a noise block.
func TestManifestKeepsNoiseFilter(t *testing.T) {
	u := mustCompileFile(t, repoPath("tests", "testdata", "dsl", "blt.dsl"))
	var m manifest.Manifest
	if err := json.Unmarshal(u.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	h := u.Func.DefaultHypers()
	want := &manifest.NoiseFilter{Buffers: []string{"s1", "s2"}, Coefficients: u.Func.NoiseCoefficients(h, manifest.NoiseCoefficients),
		Strategy: u.Func.StrategyCoefficients(h, manifest.NoiseCoefficients)}
	if diff := cmp.Diff(want, m.NoiseFilter); diff != "" {
		t.Errorf("noise_filter (-want +got):\n%s", diff)
	}
	var white manifest.Manifest
	if err := json.Unmarshal(mustCompileFile(t, repoPath("optimizers", "dp_sgd.dsl")).Manifest, &white); err != nil || white.NoiseFilter != nil {
		t.Errorf("dp_sgd's manifest: noise_filter %+v, %v; want none", white.NoiseFilter, err)
	}
}

// TestCorrelatedAttenuation checks attenuation(m) of a momentum fed by
// correlated noise — the joint system of the noise filter and the step —
// against an independent computation: the impulse response of m to z is
// the convolution of the noise filter's coefficients with the momentum's,
// and the attenuation the sum of its squares. The analysis is of the
// filter as written, in float64: its coefficients are the closed form
// c_0 = 1, c_k = −(0.0434·decay^(k−1) + 0.46·0.23^(k−1)) of blt.dsl.
func TestCorrelatedAttenuation(t *testing.T) {
	u := mustCompileFile(t, repoPath("tests", "testdata", "dsl", "blt.dsl"))
	p, err := interp.New(u.Func)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range [][]float64{{0.1, 0.5, 0.875}, {0.1, 0.8, 0.3}, {0.1, 0, 0.88}} {
		mu, decay, k := set[1], set[2], 3000
		c := make([]float64, k)
		c[0] = 1
		for j := 1; j < k; j++ {
			c[j] = -(0.0434*math.Pow(decay, float64(j-1)) + 0.46*math.Pow(0.23, float64(j-1)))
		}
		want := 0.0
		for j := range k {
			x := 0.0
			for i := 0; i <= j; i++ {
				x += c[i] * (1 - mu) * math.Pow(mu, float64(j-i))
			}
			want += x * x
		}
		got, _, ok := p.Attenuation("m", set, -1)
		if !ok || math.Abs(got-want) > 1e-9*want {
			t.Errorf("hypers %v: attenuation(m) = %v (ok %v), want %v from the coefficients", set, got, ok, want)
		}
	}
}

// TestNoiseBlockShapes compiles and steps noise blocks of unusual shapes:
// with a two_point observation (whose look-ahead state goes before the
// buffers), without buffers, in a step that never reads g, and with a
// state started from the privatized g, which the manifest quotes as g.
func TestNoiseBlockShapes(t *testing.T) {
	for name, src := range map[string]string{
		"two_point": "optimizer a\nhyper lr = 0.1\nobserve two_point(a = 0.5, lookahead = 1)\nstate m = 0\n" +
			"noise {\n\tbuffer s\n\tw = z - 0.3 * s\n\ts = 0.5 * s + z\n}\nstep {\n\tm = 0.5 * m + g\n\ttheta = theta - lr * m\n}\n",
		"no buffers": "optimizer a\nnoise {\n\tw = 0.5 * z\n}\nstep {\n\ttheta = theta - g\n}\n",
		"no g":       "optimizer a\nnoise {\n\tbuffer s\n\tw = z - 0.3 * s\n\ts = 0.5 * s + z\n}\nstep {\n\ttheta = 0.5 * theta\n}\n",
		"start":      "optimizer a\nstate m = g\nnoise {\n\tbuffer s\n\tw = z - 0.3 * s\n\ts = 0.5 * s + z\n}\nstep {\n\tm = 0.5 * m + g\n\ttheta = theta - m\n}\n",
	} {
		u := mustCompile(t, name+".dsl", []byte(src))
		if start := ir.StartOf(u.Func, "m"); start != nil && ir.ExprString(start) != "g" {
			t.Errorf("%s: m starts from %q, want g", name, ir.ExprString(start))
		}
		p, err := interp.New(u.Func)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		states := make([][]float32, p.NumStates())
		for i := range states {
			states[i] = make([]float32, 3)
		}
		h := u.Func.DefaultHypers()
		nz := &interp.Noise{Stream: rng.Stream{Mode: rng.Philox, Seed: 1}, SigmaW: 1}
		if err := errors.Join(p.Init(h, states), p.Step(p.HostScalars(h, 0, 1), nz, []float32{1, 2, 3}, []float32{1, 1, 1}, states)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
