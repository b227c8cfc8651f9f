package tests

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/runtime/npy"
)

// diffSteps is the number of steps of every differential run.
const diffSteps = 200

// shippedDSL returns the paths of optimizers/*.dsl.
func shippedDSL(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(repoPath("optimizers", "*.dsl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no optimizers/*.dsl found (err %v)", err)
	}
	return paths
}

// TestOptimizersRegistered checks that every optimizers/*.dsl has a
// generated package wired into these tests, with the DSL's states in order,
// its hyper sets and its privatize references.
func TestOptimizersRegistered(t *testing.T) {
	for _, path := range shippedDSL(t) {
		fn := mustCompileFile(t, path).Func
		opt := optimizerNamed(fn.Name)
		if fn.Reduce != nil {
			// Per-tensor reductions: the tests here step one flat buffer
			// against bound arithmetic that has no reduction yet; the
			// runtime's TestReduceOracles and TestReduceBackends hold them.
			continue
		}
		switch {
		case opt == nil:
			t.Errorf("%s: optimizer %s has no entry in optimizers (tests/optimizers_test.go); add its generated package and oracle", path, fn.Name)
		case !slices.Equal(opt.states, fn.States):
			t.Errorf("%s: states %v, but tests/optimizers_test.go lists %v", path, fn.States, opt.states)
		case hyperSets[fn.Name] == nil:
			t.Errorf("%s: no hyperSets entry in tests/oracle_test.go", path)
		case opt.pkg.priv.norms == nil:
			t.Errorf("%s: no privatize references in its goPackage (tests/optimizers_test.go)", path)
		case opt.noise != (fn.Noise != nil):
			t.Errorf("%s: a noise block is %v, but tests/optimizers_test.go marks noise %v", path, fn.Noise != nil, opt.noise)
		}
	}
}

// diffCase is one differential run.
type diffCase struct {
	n       int
	seed    uint64
	sigmaW2 float64
	sets    []setting
}

// TestInterpreterMatchesGenerated runs every shipped optimizer through the
// IR interpreter (as `fibergen run` does) and through its generated package,
// and requires the same bits in theta and in every state.
func TestInterpreterMatchesGenerated(t *testing.T) {
	for _, path := range shippedDSL(t) {
		fn := mustCompileFile(t, path).Func
		opt := optimizerNamed(fn.Name)
		if opt == nil {
			continue // TestOptimizersRegistered reports it
		}
		t.Run(fn.Name, func(t *testing.T) {
			t.Parallel()
			for _, c := range diffCases(fn.Name) {
				checkDifferential(t, fn, opt, c)
			}
		})
	}
}

// diffCases lists sizes, seeds, σ_w² = 0 and large, and the defaults and
// every override set of the oracle tests.
func diffCases(name string) []diffCase {
	var cases []diffCase
	for _, sets := range hyperSets[name] {
		for _, sigmaW2 := range []float64{0, 7.5} {
			for _, n := range []int{0, 1, 3, 1023, 4099} {
				for seed := range uint64(3) {
					if n < 1000 || seed == 0 {
						cases = append(cases, diffCase{n: n, seed: seed, sigmaW2: sigmaW2, sets: sets})
					}
				}
			}
		}
	}
	return cases
}

func checkDifferential(t *testing.T, fn *ir.Func, opt *optimizer, c diffCase) {
	theta0, grads, planted := diffInputs(c.n, c.seed)
	engine := interpEngine(t, fn, c.sets)
	thetaI := slices.Clone(theta0)
	statesI, err := engine.Run(thetaI, grads, c.sigmaW2)
	if err != nil {
		t.Fatalf("%+v: Engine.Run: %v", c, err)
	}
	impl, err := opt.newImpl(c.sets, c.n)
	if err != nil {
		t.Fatal(err)
	}
	thetaG := slices.Clone(theta0)
	for s := 0; c.n > 0 && s < len(grads)/c.n; s++ {
		if err := impl.Update(thetaG, grads[s*c.n:(s+1)*c.n], c.sigmaW2); err != nil {
			t.Fatal(err)
		}
	}
	bufsI := append([][]float32{thetaI}, statesI...)
	bufsG := append([][]float32{thetaG}, impl.States()...)
	names := append([]string{"theta"}, fn.States...)
	for k := range bufsI {
		if i := floatbits.FirstDiff(bufsI[k], bufsG[k]); i >= 0 {
			t.Errorf("n=%d seed=%d sigma_w2=%g sets=%v: %s differs after %d steps: max %d ulp; %s",
				c.n, c.seed, c.sigmaW2, c.sets, names[k], diffSteps, floatbits.MaxULP(bufsI[k], bufsG[k]),
				firstDivergence(t, fn, opt, c, theta0, grads))
			return
		}
		if err := floatbits.TooManyNaNs(bufsI[k], planted); err != nil {
			t.Errorf("n=%d seed=%d sigma_w2=%g sets=%v: %s after %d steps: %v", c.n, c.seed, c.sigmaW2, c.sets, names[k], diffSteps, err)
		}
	}
}

// interpEngine is the interpreter with fn's defaults overridden by sets
// (the derived hypers they do not name following them, ir.Func.Derive).
func interpEngine(t *testing.T, fn *ir.Func, sets []setting) interp.Engine {
	t.Helper()
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	var settings []string
	for _, s := range sets {
		settings = append(settings, fmt.Sprintf("%s=%v", s.name, s.value))
	}
	h, err := fn.ApplySettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	return interp.Engine{P: p, Hypers: h}
}

// firstDivergence reruns both engines step by step and describes the first
// step and index where a buffer differs.
func firstDivergence(t *testing.T, fn *ir.Func, opt *optimizer, c diffCase, theta0, grads []float32) string {
	engine := interpEngine(t, fn, c.sets)
	statesI := make([][]float32, engine.NumStates())
	for k := range statesI {
		statesI[k] = make([]float32, c.n)
	}
	engine.Init(statesI)
	impl, _ := opt.newImpl(c.sets, c.n)
	thetaI, thetaG := slices.Clone(theta0), slices.Clone(theta0)
	for k, s := range impl.States() {
		if i := floatbits.FirstDiff(statesI[k], s); i >= 0 {
			return fmt.Sprintf("the initial %s differs at index %d: interpreter %g, generated %g", fn.States[k], i, statesI[k][i], s[i])
		}
	}
	for s := 0; s < diffSteps; s++ {
		g := grads[s*c.n : (s+1)*c.n]
		if err := engine.Step(s, c.sigmaW2, thetaI, g, statesI); err != nil {
			return err.Error()
		}
		if err := impl.Update(thetaG, g, c.sigmaW2); err != nil {
			t.Fatal(err)
		}
		bufsI := append([][]float32{thetaI}, statesI...)
		bufsG := append([][]float32{thetaG}, impl.States()...)
		for k := range bufsI {
			if i := floatbits.FirstDiff(bufsI[k], bufsG[k]); i >= 0 {
				name := "theta"
				if k > 0 {
					name = fn.States[k-1]
				}
				return fmt.Sprintf("first at step %d, %s[%d]: interpreter %g (%#08x), generated %g (%#08x), gradient %g",
					s, name, i, bufsI[k][i], math.Float32bits(bufsI[k][i]), bufsG[k][i], math.Float32bits(bufsG[k][i]), g[i])
			}
		}
	}
	return "no divergence when rerun step by step"
}

// diffInputs returns θ_0 and diffSteps steps of gradients that mix ordinary
// scales with zeros, subnormals, huge values that overflow when squared,
// signed zeros and infinities (whose NaNs must agree bit for bit too), and
// how many coordinates have the huge or infinite ones: those that may turn
// NaN.
func diffInputs(n int, seed uint64) (theta0, grads []float32, planted int) {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	theta0 = make([]float32, n)
	for i := range theta0 {
		theta0[i] = float32(r.NormFloat64())
		if i%17 == 5 {
			theta0[i] = float32(math.Copysign(0, -1))
		}
	}
	grads = make([]float32, diffSteps*n)
	for i := range n {
		kind := r.IntN(20)
		if kind == 2 || kind == 4 {
			planted++
		}
		scale := math.Pow(10, -6+12*r.Float64())
		for s := range diffSteps {
			var x float64
			switch kind {
			case 0: // always zero
			case 1: // subnormal
				x = 1e-41 * r.NormFloat64()
			case 2: // huge: g² overflows float32
				x = 3e19 * r.NormFloat64()
			case 3: // negative zero and tiny values
				x = math.Copysign(0, -1)
				if s%3 == 0 {
					x = 1e-30 * r.NormFloat64()
				}
			case 4: // one infinite gradient, then NaNs downstream
				x = r.NormFloat64()
				if s == diffSteps/2 {
					x = math.Inf(1 - 2*(i%2))
				}
			default:
				x = scale * (r.NormFloat64() + math.Sin(float64(s)/10))
			}
			grads[s*n+i] = float32(x)
		}
	}
	return theta0, grads, planted
}

// TestRunMatchesGenerated checks that `fibergen run` writes byte for byte
// the .npy file that npy.WriteFile writes for the generated package's θ_T.
func TestRunMatchesGenerated(t *testing.T) {
	for _, path := range shippedDSL(t) {
		fn := mustCompileFile(t, path).Func
		opt := optimizerNamed(fn.Name)
		if opt == nil {
			continue
		}
		sets := hyperSets[fn.Name]
		for _, c := range []diffCase{
			{n: 300, seed: 1, sigmaW2: 0, sets: nil},
			{n: 300, seed: 2, sigmaW2: 7.5, sets: sets[len(sets)-1]},
		} {
			theta0, grads, _ := diffInputs(c.n, c.seed)
			finiteGradients(grads)
			raw, _ := runFibergen(t, path, theta0, grads, c.sigmaW2, c.sets)
			impl, err := opt.newImpl(c.sets, c.n)
			if err != nil {
				t.Fatal(err)
			}
			theta := slices.Clone(theta0)
			for s := range diffSteps {
				if err := impl.Update(theta, grads[s*c.n:(s+1)*c.n], c.sigmaW2); err != nil {
					t.Fatal(err)
				}
			}
			want := filepath.Join(t.TempDir(), "want.npy")
			if err := npy.WriteFile(want, npy.Array{Shape: []int{c.n}, Data: theta}); err != nil {
				t.Fatal(err)
			}
			wantRaw, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, wantRaw) {
				out, _ := npy.Read(bytes.NewReader(raw))
				t.Errorf("%s, %+v: fibergen run's output differs from the generated package's (%d vs %d bytes; max %d ulp)",
					fn.Name, c, len(raw), len(wantRaw), floatbits.MaxULP(out.Data, theta))
			}
		}
	}
}

// finiteGradients replaces ±Inf by ±MaxFloat32: fibergen run refuses a
// step whose gradient is not finite (the runtime's guard), and the largest
// finite values still overflow downstream.
func finiteGradients(grads []float32) {
	for i, g := range grads {
		if math.IsInf(float64(g), 0) {
			grads[i] = float32(math.Copysign(math.MaxFloat32, float64(g)))
		}
	}
}
