package runtime_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime"
)

// TestExtrapolationGuard checks the convexity guard: gamma = 0.4 puts
// fiber's a = (1 − κ)/(κγ) at 1.67; SetHyper refuses it and changes
// nothing, unless the optimizer was opened with AllowExtrapolation.
func TestExtrapolationGuard(t *testing.T) {
	theta, grads := inputs(1)
	for _, allow := range []bool{false, true} {
		o, ts := openFiber(t, runtime.Options{AllowExtrapolation: allow}, theta)
		err := o.SetHyper("gamma", 0.4)
		var ee *ir.ExtrapolationError
		if allow != (err == nil) || !allow && !errors.As(err, &ee) {
			t.Fatalf("allow %v: SetHyper(gamma, 0.4) = %v", allow, err)
		}
		if g, _ := o.Hyper("gamma"); allow != (g == 0.4) {
			t.Errorf("allow %v: gamma = %v after SetHyper", allow, g)
		}
		if err := stepAll(o, ts, grads[0]); err != nil {
			t.Errorf("allow %v: Step: %v", allow, err)
		}
	}
}

// TestLookahead checks the look-ahead point the step writes against
// θ_{t+1} + γ·(θ_{t+1} − θ_t) computed here in float32 from the parameters
// before and after each step; before the first step it is θ_0.
func TestLookahead(t *testing.T) {
	const steps = 3
	theta, grads := inputs(steps)
	o, ts := openFiber(t, runtime.Options{}, theta)
	gamma := float32(o.Observation().Lookahead)
	prev := flatParams(t, ts)
	if got := flatLookahead(t, ts); !slices.Equal(got, prev) {
		t.Fatal("before the first step the look-ahead point is not θ_0")
	}
	for s := range steps {
		if err := stepAll(o, ts, grads[s]); err != nil {
			t.Fatal(err)
		}
		cur, got := flatParams(t, ts), flatLookahead(t, ts)
		for i := range cur {
			want := cur[i] + float32(gamma*(cur[i]-prev[i])) // float32(): no FMA
			if !floatbits.Same(got[i], want) {
				t.Fatalf("step %d: lookahead[%d] = %v, want %v", s, i, got[i], want)
			}
		}
		prev = cur
	}
}

func flatLookahead(t *testing.T, ts []*runtime.Tensor) []float32 {
	t.Helper()
	var out []float32
	for _, tn := range ts {
		p, err := tn.Lookahead()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p...)
	}
	return out
}
