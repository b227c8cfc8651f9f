package ir

import (
	"fmt"
	"math"
)

// ExtrapolationError reports a two_point mixing weight a outside [0, 1]:
// the observation u = a·∇f(θ_t + γ·d_{t−1}) + (1 − a)·∇f(θ_t) is then no
// longer a convex combination of the two gradients and can be longer than
// both, so clipping at C cuts more of the signal than the paper's analysis
// assumes (FiBeR paper, Appendix F). Callers that let a user opt in check
// for it with errors.As.
type ExtrapolationError struct {
	Expr    string  // a as a DSL expression
	A       float64 // its value
	T       int     // the step
	Setting string  // the hypers a reads, name=value
}

// ExtrapolationFormat is ExtrapolationError's message with verbs for a's
// expression, its value, the setting and the step; generated packages print
// the same message.
const ExtrapolationFormat = "observe two_point: a = %s = %.6g at %s, step %d, is outside [0, 1]: " +
	"the observation a·∇f(θ + γ·d) + (1 − a)·∇f(θ) then extrapolates past the two gradients " +
	"and can inflate each example's gradient before clipping (FiBeR paper, Appendix F; " +
	"for a = (1 − κ)/(κγ) keep γ ≥ (1 − κ)/κ); change the hypers or opt in explicitly"

func (e *ExtrapolationError) Error() string {
	return fmt.Sprintf(ExtrapolationFormat, e.Expr, e.A, e.Setting, e.T)
}

// MixingWeight returns the index of the two_point mixing weight a among the
// observation's arguments, or -1.
func (f *Func) MixingWeight() int {
	if f.Observe == nil || f.Observe.Kind != "two_point" {
		return -1
	}
	for i, name := range f.Observe.Args {
		if name == "a" {
			return i
		}
	}
	return -1
}

// CheckObservationFinite reports an argument of the observation that is
// NaN or ±Inf at hypers h and step t (a hyper product that overflows, say):
// an error whatever the opt-ins, since no gradient can be formed with it.
func (f *Func) CheckObservationFinite(h []float64, t int) error {
	for i, x := range f.ObservationAt(h, t) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			st := f.ObsArgs.Stores()[i]
			return fmt.Errorf("observe %s: %s = %s is %v at %s, step %d: the observation's arguments must be finite",
				f.Observe.Kind, f.Observe.Args[i], ExprString(st.Args[0]), x, f.SettingOf(f.ObsArgs, h), t)
		}
	}
	return nil
}

// ObservationAt returns the observation's arguments (Observe.Args order) at
// hypers h and step t, or nil for an optimizer without one.
func (f *Func) ObservationAt(h []float64, t int) []float64 {
	if f.Observe == nil {
		return nil
	}
	var out []float64
	for _, st := range f.ObsArgs.Stores() {
		out = append(out, f.EvalUniform(st.Args[0], h, float64(t)))
	}
	return out
}

// CheckObservation reports, as an *ExtrapolationError, a two_point mixing
// weight a outside [0, 1] at hypers h and step t.
func (f *Func) CheckObservation(h []float64, t int) error {
	i := f.MixingWeight()
	if i < 0 {
		return nil
	}
	if a := f.ObservationAt(h, t)[i]; !(a >= 0 && a <= 1) {
		st := f.ObsArgs.Stores()[i]
		return &ExtrapolationError{Expr: ExprString(st.Args[0]), A: a, T: t, Setting: f.SettingOf(f.ObsArgs, h)}
	}
	return nil
}
