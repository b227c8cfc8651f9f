package lower_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	fgrng "github.com/fibergen/fibergen/rng"
)

// fuzzSeeds are small valid programs that together use every op, every
// built-in value, observe, uniform and varying states, and locals.
var fuzzSeeds = []string{
	"optimizer a\nstep {\n\ttheta = -g\n}\n",
	"optimizer a\nstep {\n\ttheta = (theta + g) * (theta - g) / (g + 1)\n}\n",
	"optimizer a\nstep {\n\ttheta = sqrt(abs(g)) + min(theta, g) - max(g, 0)\n}\n",
	"optimizer a\nstep {\n\ttheta = g ** 3 + g ** -2 + g ** 0 + (theta) ** (-1)\n}\n",
	"optimizer a\nhyper beta = 0.9 in [0, 1)\nstep {\n\ttheta = theta * (1 - beta ** (t + 1))\n}\n",
	"optimizer a\nstep {\n\ttheta = max(g * g - sigma_w2, 1e-8)\n}\n",
	"optimizer a\nhyper kappa = 0.6 in (0, 1]\nobserve two_point(a = 1 - kappa, lookahead = kappa / (t + 1))\nstate m = kappa\nstep {\n\tm = kappa * m + g\n\ttheta = theta - m\n}\n",
	"optimizer a\nhyper lr = 0.1\nstate m = 0\nstep {\n\tm = lr\n\ttheta = theta - m * g - (m + 1)\n}\n",
	"optimizer a\nhyper lr = 0.1\nstep {\n\td = g / (sqrt(theta * theta) + 1e-8)\n\ttheta = theta - lr * d + (d * t) ** 0\n}\n",
	"optimizer a\nstep {\n\ttheta = (1e30 * 1e3) * g + (0 - 0) * theta - 1e-46 + 1e38\n}\n",
	"optimizer a\nhyper lr = 0.1\nstep {\n\ttheta = theta * min(abs(-lr), max(lr, t)) + -g\n}\n",
	"optimizer a\nhyper lr = 0.1\nstep {\n\ttheta = g / (lr - lr) + sqrt(lr)\n}\n",
	"optimizer a\nstep {\n\ttheta = g ** 64 - g ** -64\n}\n",
	"optimizer a\nstate p = 0\nstate q = 1\nstep {\n\tp = q + g\n\tq = p * p\n\ttheta = theta - p / q\n}\n",
	"optimizer a\nhyper d = 0.5 in [0, 1)\nnoise {\n\tbuffer s\n\tu = 0.25 * s\n\tw = z - u\n\ts = d * s + z\n}\nstep {\n\ttheta = theta - g\n}\n",
	"optimizer a\nhyper lr = 0.1\nstate m = 0\nstep {\n\tm = 0.9 * m + g\n\tn = norm(theta) + sum(m * g) / mean(g)\n\ttheta = theta - lr * n * m\n}\n",
	"optimizer a\nstate m = g\nnoise {\n\tw = 2 * z\n}\nstep {\n\tm = 0.5 * m + g\n\ttheta = theta - m * attenuation(m)\n}\n",
	"optimizer a\nhyper b = 0.5 in [0, 1)\nhyper w = 10 in [0, inf)\nscalar c = 0\nstate m = 0\nstep {\n\thost {\n\t\tc = b * min((t + 1) / max(w, 1), 1)\n\t}\n\tm = c * m + (1 - c) * g\n\ttheta = theta - m / (1 + attenuation(m) + attenuation_t(m))\n}\n",
	"optimizer a\nhyper b = 0.9 in [0, 1)\nstate m = 0\nstep {\n\tm = select(t < 3, 0.1, b ** (t + 1)) * m + exp(-t) * g / (t + 1)\n\ttheta = theta - m * attenuation(m)\n}\n",
	"optimizer a\nhyper b = 0.9 in [0, 1)\nstate r: rows = 0\nstate c: cols = 1\nstep {\n\tq = c\n\tr = b * r + rowmean(g * g)\n\tc = select(t < 1, q, c + colsum(g)) / max(c)\n\ttheta = theta - g * q / sqrt(r * c + norm(r) + min(r)) + sum(c) * mean(c)\n}\n",
}

// fuzzValues are the coordinates the fuzz target runs a step on.
var fuzzValues = []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 3e38, 1e-45, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}

func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob("../optimizers/*.dsl")
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	for _, src := range fuzzSeeds {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		fn, errs, err := irtest.Compile("fuzz.dsl", []byte(src))
		if len(errs) > 0 {
			return
		}
		if err != nil {
			t.Fatalf("Compile of a source that checks clean: %v\n%s", err, src)
		}
		if err := ir.Verify(fn.Func); err != nil {
			t.Fatalf("Verify after Compile: %v\n%s", err, fn)
		}
		_ = fn.String()
		for _, v := range ir.HostScalars(fn.Step) {
			ir.DependsOnStep(v)
		}
		p, err := interp.New(fn.Func)
		if err != nil {
			t.Fatalf("interp.New: %v\n%s", err, fn)
		}
		runFuzzStep(t, p)
	})
}

// runFuzzStep runs init, observe and two steps on a few coordinates.
func runFuzzStep(t *testing.T, p *interp.Program) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 7
	theta, g := make([]float32, n), make([]float32, n)
	for i := range n {
		theta[i] = fuzzValues[rng.IntN(len(fuzzValues))]
		g[i] = float32(rng.NormFloat64())
	}
	states := make([][]float32, p.NumStates())
	for i := range states {
		states[i] = make([]float32, n)
	}
	h := p.Func.DefaultHypers()
	p.Init(h, states)
	if obs := p.Func.Observe; obs != nil {
		if got := p.Observe(h, 1); len(got) != len(obs.Args) {
			t.Fatalf("Observe returned %d values for %d arguments", len(got), len(obs.Args))
		}
	}
	if p.Func.HasLines() {
		runFuzzLines(t, p, theta, g)
		return
	}
	for step := range 2 {
		nz := &interp.Noise{Stream: fgrng.Stream{Mode: fgrng.Mode(1 + step), Seed: 3, Step: uint32(step)}, SigmaW: 0.5}
		if err := p.Step(p.HostScalars(h, step, 0.25), nz, theta, g, states); err != nil {
			t.Fatalf("Step %d: %v", step, err)
		}
	}
}

// runFuzzLines runs two steps of an optimizer with line values on theta
// as one row and as one column, with g privatized by the engine.
func runFuzzLines(t *testing.T, p *interp.Program, theta, g []float32) {
	for _, shape := range []interp.Shape{{Rows: 1, Cols: len(theta)}, {Rows: len(theta), Cols: 1}} {
		e := interp.Engine{P: p, Hypers: p.Func.DefaultHypers(), Noise: true, Seed: 3, Shape: shape}
		if _, err := e.Run(append([]float32(nil), theta...), append(slices.Clone(g), g...), 0.25); err != nil && !errors.As(err, new(*interp.NonFiniteValueError)) {
			t.Fatalf("Run as %d × %d: %v", shape.Rows, shape.Cols, err)
		}
	}
}

// TestFuzzSeedsCheckClean keeps the seeds useful: a seed with errors would
// only exercise the early return.
func TestFuzzSeedsCheckClean(t *testing.T) {
	for _, src := range fuzzSeeds {
		if _, errs, err := irtest.Compile("seed.dsl", []byte(src)); len(errs) > 0 || err != nil {
			t.Errorf("seed does not compile: %v %v\n%s", errs, err, src)
		}
	}
}
