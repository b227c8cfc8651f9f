package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/pipeline"
)

func TestInit(t *testing.T) {
	p := compile(t, program("hyper lr = 0.1\nhyper k = 3\nstate m = lr * k\nstate v = 1 / 3\nstate w = -lr", "m = m + g\nv = v * g\nw = w\ntheta = theta - m"))
	for _, h := range [][]float64{{0.1, 3}, {0.25, 0.1}, {-2, 1e-30}} {
		states := newStates(p, 4)
		for _, s := range states {
			for i := range s {
				s[i] = 42 // Init must overwrite
			}
		}
		p.Init(h, states)
		lr, k := h[0], h[1]
		want := []float32{float32(lr * k), float32(1.0 / 3), float32(-lr)}
		for j, s := range states {
			for i, x := range s {
				if !floatbits.Same(x, want[j]) {
					t.Errorf("hypers %v: state %s[%d] = %g, want %g", h, p.Func.States[j], i, x, want[j])
				}
			}
		}
	}
}

func TestObserve(t *testing.T) {
	p := compile(t, program("hyper kappa = 0.6\nhyper gamma = 0.7\nobserve two_point(a = (1 - kappa) / (kappa * gamma), lookahead = gamma * (t + 1))", "theta = g"))
	for _, tt := range []struct {
		kappa, gamma float64
		t            int
	}{{0.6, 0.7, 0}, {0.5, 0.8, 3}, {0.1, 9, 1000}} {
		got := p.Observe([]float64{tt.kappa, tt.gamma}, tt.t)
		a := (1 - tt.kappa) / (tt.kappa * tt.gamma)
		lookahead := tt.gamma * float64(tt.t+1)
		if len(got) != 2 || got[0] != a || got[1] != lookahead {
			t.Errorf("Observe(kappa=%g, gamma=%g, t=%d) = %v, want [%v %v]", tt.kappa, tt.gamma, tt.t, got, a, lookahead)
		}
	}
	if got := compile(t, program("", "theta = g")).Observe(nil, 0); len(got) != 0 {
		t.Errorf("Observe without an observation = %v, want none", got)
	}
}

// noPanic runs f and turns a panic into a test failure.
func noPanic(t *testing.T, what string, f func() error) error {
	t.Helper()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panicked: %v", what, r)
			}
		}()
		err = f()
	}()
	return err
}

func TestStepRejectsBadBuffers(t *testing.T) {
	p := compile(t, program("state m = 0\nstate v = 0", "m = g\nv = m\ntheta = v"))
	s := p.HostScalars(p.Func.DefaultHypers(), 0, 0)
	buf := func(n int) []float32 { return make([]float32, n) }
	tests := []struct {
		name      string
		theta, g  []float32
		states    [][]float32
		wantError string
	}{
		{"no states", buf(3), buf(3), nil, "needs 2 states, got 0"},
		{"one state too few", buf(3), buf(3), [][]float32{buf(3)}, "needs 2 states, got 1"},
		{"one state too many", buf(3), buf(3), [][]float32{buf(3), buf(3), buf(3)}, "needs 2 states, got 3"},
		{"short g", buf(3), buf(2), [][]float32{buf(3), buf(3)}, "buffer g has length 2, theta 3"},
		{"long g", buf(3), buf(4), [][]float32{buf(3), buf(3)}, "buffer g has length 4, theta 3"},
		{"short state", buf(3), buf(3), [][]float32{buf(3), buf(1)}, "buffer v has length 1, theta 3"},
		{"nil state", buf(3), buf(3), [][]float32{nil, buf(3)}, "buffer m has length 0, theta 3"},
		{"empty theta", nil, buf(1), [][]float32{nil, nil}, "buffer g has length 1, theta 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := noPanic(t, "Step", func() error { return p.Step(s, nil, tt.theta, tt.g, tt.states) })
			if err == nil || !strings.Contains(err.Error(), tt.wantError) {
				t.Errorf("Step: err = %v, want it to mention %q", err, tt.wantError)
			}
		})
	}
	t.Run("all empty", func(t *testing.T) {
		if err := noPanic(t, "Step", func() error { return p.Step(s, nil, nil, nil, [][]float32{nil, nil}) }); err != nil {
			t.Errorf("Step on empty buffers: %v", err)
		}
	})
	t.Run("buffers untouched on error", func(t *testing.T) {
		theta, g := []float32{1, 2}, []float32{3}
		_ = p.Step(s, nil, theta, g, [][]float32{{5, 6}, {7, 8}})
		if theta[0] != 1 || theta[1] != 2 {
			t.Errorf("theta changed to %v by a rejected step", theta)
		}
	})
}

func TestNewRejects(t *testing.T) {
	src := program("hyper lr = 0.1", "theta = theta - lr * g")
	u, errs, err := pipeline.Compile("t.dsl", []byte(src))
	if len(errs) > 0 || err != nil {
		t.Fatal(errs, err)
	}
	f := u.Func
	t.Run("not hoisted", func(t *testing.T) {
		// Move the first kernel value, a load, ahead of the host part.
		fn := *f
		step := *fn.Step
		vs := step.Values
		k := 0
		for vs[k].Uniform {
			k++
		}
		if vs[k].Op != ir.OpLoad {
			t.Fatalf("first kernel value is %s, not a load", vs[k].Op)
		}
		vs = append(append([]*ir.Value{vs[k]}, vs[:k]...), vs[k+1:]...)
		step.Values = vs
		fn.Step = &step
		if _, err := interp.New(&fn); err == nil || !strings.Contains(err.Error(), "not hoisted") {
			t.Errorf("New of an unhoisted block: err = %v", err)
		}
	})
	t.Run("fails Verify", func(t *testing.T) {
		fn := *f
		step := *fn.Step
		step.Values = step.Values[:len(step.Values)-1] // drop the store of theta
		fn.Step = &step
		if _, err := interp.New(&fn); err == nil || !strings.Contains(err.Error(), "no store of theta") {
			t.Errorf("New of an invalid function: err = %v", err)
		}
	})
}

func TestHostScalarValues(t *testing.T) {
	p := compile(t, program("hyper lr = 1e-3\nhyper beta1 = 0.9", "theta = theta - lr * g / (1 - beta1 ** (t + 1)) + sigma_w2"))
	scalars := ir.HostScalars(p.Func.Step)
	if len(scalars) != 3 {
		t.Fatalf("%d host scalars, want 3 (lr, the bias correction, sigma_w2)", len(scalars))
	}
	for _, step := range []int{0, 1, 10, 1000} {
		lr, beta1, sigmaW2 := 1e-3, 0.8, 0.5+float64(step)
		s := p.HostScalars([]float64{lr, beta1}, step, sigmaW2)
		want := []float32{float32(lr), float32(1 - math.Pow(beta1, float64(step)+1)), float32(sigmaW2)}
		for i, v := range scalars {
			if got := s.Value(v); !floatbits.Same(got, want[i]) {
				t.Errorf("step %d: scalar %s = %g, want %g", step, ir.ExprString(v), got, want[i])
			}
		}
	}
}

// TestEngineDPSGD runs dp_sgd through Engine.Run and recomputes every step
// in float32 by hand: theta - lr*g, each operation rounded.
func TestEngineDPSGD(t *testing.T) {
	p := compileFile(t, "../../optimizers/dp_sgd.dsl")
	h, err := p.Func.ApplySettings([]string{"lr=0.03"})
	if err != nil {
		t.Fatal(err)
	}
	theta := []float32{1, -2, 0.5, 1e-3, 3e38}
	const steps = 4
	grads := make([]float32, 0, steps*len(theta))
	for s := range steps {
		for i := range theta {
			grads = append(grads, float32(i+1)*0.1-float32(s)*0.7)
		}
	}
	want := append([]float32(nil), theta...)
	lr := float32(0.03)
	for s := range steps {
		for i := range want {
			want[i] = float32(want[i] - float32(lr*grads[s*len(theta)+i]))
		}
	}
	states, err := interp.Engine{P: p, Hypers: h}.Run(theta, grads, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 0 {
		t.Errorf("dp_sgd has %d states, want 0", len(states))
	}
	for i := range want {
		if !floatbits.Same(theta[i], want[i]) {
			t.Errorf("theta[%d] = %g, want %g", i, theta[i], want[i])
		}
	}
}

// TestEnginePassesStepAndNoise checks that Engine.Run hands its
// step index and noise variance to the program.
func TestEnginePassesStepAndNoise(t *testing.T) {
	p := compile(t, program("state m = 0", "m = m + g\ntheta = theta + (t + sigma_w2)"))
	theta := []float32{0.25}
	grads := []float32{1, 2, 3}
	states, err := interp.Engine{P: p}.Run(theta, grads, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	want := float32(0.25)
	for s := range 3 {
		want = float32(want + float32(float64(s)+0.1))
	}
	if !floatbits.Same(theta[0], want) {
		t.Errorf("theta = %g, want %g", theta[0], want)
	}
	if len(states) != 1 || states[0][0] != 6 {
		t.Errorf("states = %v, want [[6]]", states)
	}
	if n := (interp.Engine{P: p}).NumStates(); n != 1 {
		t.Errorf("NumStates = %d", n)
	}
}

func TestEngineReportsStepErrors(t *testing.T) {
	p := compile(t, program("state m = 0", "m = g\ntheta = m"))
	e := interp.Engine{P: p}
	err := noPanic(t, "Engine.Step", func() error { return e.Step(0, 0, make([]float32, 2), make([]float32, 2), nil) })
	if err == nil || !strings.Contains(err.Error(), "needs 1 states, got 0") {
		t.Errorf("Engine.Step with no states: err = %v", err)
	}
}

func compileFile(t *testing.T, path string) *interp.Program {
	t.Helper()
	src, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return compile(t, src)
}
