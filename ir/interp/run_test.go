package interp_test

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"

	"github.com/fibergen/fibergen/ir/interp"
)

// momentum is a one-state optimizer whose result depends on the order of
// the steps and on the state's initial value.
const momentumSrc = `optimizer momentum
hyper lr = 0.5
hyper mu = 0.25
state m = 1
step {
	m = mu * m + g
	theta = theta - lr * m
}
`

func momentumEngine(t *testing.T) interp.Engine {
	t.Helper()
	fn, _ := irtest.Build(t, momentumSrc)
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	return interp.Engine{P: p, Hypers: fn.DefaultHypers()}
}

func TestRunSteps(t *testing.T) {
	theta := []float32{1, -2}
	grads := []float32{1, 2, 3, 4, 0.5, -1} // three steps of two coordinates
	states, err := momentumEngine(t).Run(theta, grads, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, m := []float32{1, -2}, []float32{1, 1}
	for step := range 3 {
		for i := range want {
			m[i] = float32(0.25*m[i]) + grads[2*step+i]
			want[i] -= float32(0.5 * m[i])
		}
	}
	for i := range want {
		if theta[i] != want[i] || states[0][i] != m[i] {
			t.Errorf("coordinate %d: theta %v m %v, want %v %v", i, theta[i], states[0][i], want[i], m[i])
		}
	}
}

func TestRunRejectsPartialStep(t *testing.T) {
	_, err := momentumEngine(t).Run(make([]float32, 3), make([]float32, 7), 0)
	if err == nil || !strings.Contains(err.Error(), "not a whole number of steps") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunEmpty(t *testing.T) {
	states, err := momentumEngine(t).Run(nil, nil, 0)
	if err != nil || len(states) != 1 || len(states[0]) != 0 {
		t.Fatalf("states %v, err %v", states, err)
	}
	if _, err := momentumEngine(t).Run(nil, []float32{1}, 0); err == nil {
		t.Fatal("gradients for zero coordinates were accepted")
	}
}
