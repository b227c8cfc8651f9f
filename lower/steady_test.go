package lower_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/internal/irtest"
)

// steadyDecls are the declarations of the steady-value tests; warmup's
// range [0, inf) leaves warmup > 0 undecided, so its limit must not
// depend on it.
const steadyDecls = `hyper lr = 0.1 in [0, inf)
hyper beta = 0.9 in [0, 1)
hyper beta3 = 0.5 in [0, 1)
hyper warmup = 20 in [0, inf)
hyper k = 1
state x = 0`

// steadyProgram is a program of steadyDecls whose step runs host, then
// update, then a step of theta that reads attenuation(x); the scalars
// b3 and acc are declared where host assigns them.
func steadyProgram(host, update string) string {
	decls, body := steadyDecls, update+"\ntheta = theta - lr * x / (1 + attenuation(x))"
	for _, s := range []string{"b3", "acc"} {
		if strings.Contains(host, s+" = ") {
			decls += "\nscalar " + s + " = 0"
		}
	}
	if host != "" {
		body = "host {\n" + host + "\n}\n" + body
	}
	return irtest.Program(decls, body)
}

// TestSteadyValue holds attenuation(x) of time-varying filters x = m_t·x
// + b_t·g to the limit of the exact covariance Σ_t = m_t² Σ_{t−1} + b_t²,
// followed here in float64 for 4000 steps from coefficients written by
// hand, and to the closed form the compiler prints.
func TestSteadyValue(t *testing.T) {
	tests := []struct {
		name, host, update string
		m, b               func(t float64) float64 // the coefficients at step t, at the defaults
		expr               string
	}{
		{
			name:   "a divisor that grows: m_t → 0",
			update: "x = x / (t + 1) + g",
			m:      func(t float64) float64 { return 1 / (t + 1) }, b: one,
			expr: "1",
		},
		{
			name:   "bias correction: beta ** (t + 1) → 0",
			update: "x = 0.5 * (1 - beta ** (t + 1)) * x + g",
			m:      func(t float64) float64 { return 0.5 * (1 - math.Pow(0.9, t+1)) }, b: one,
			expr: "4 / 3",
		},
		{
			name:   "a select on t settles",
			update: "x = select(t < 10, 0.9, beta3) * x + g",
			m:      func(t float64) float64 { return map[bool]float64{true: 0.9, false: 0.5}[t < 10] }, b: one,
			expr: "1 / (1 - beta3 ** 2)",
		},
		{
			name: "AdEMAMix's warm-up of beta3 in a host scalar",
			host: "f = select(warmup > 0, min((t + 1) / max(warmup, 1), 1), 1)\n" +
				"b3 = min(exp(1 / ((1 - f) / log(beta) + f / log(beta3))), beta3)",
			update: "x = b3 * x + (1 - b3) * g",
			m:      ademamixBeta3, b: func(t float64) float64 { return 1 - ademamixBeta3(t) },
			expr: "(1 - min(exp(1 / (0 / log(beta) + 1 / log(beta3))), beta3)) / (1 + min(exp(1 / (0 / log(beta) + 1 / log(beta3))), beta3))",
		},
		{
			name:   "a gain that fades: b_t → 0",
			update: "x = 0.5 * x + g / (t + 1)",
			m:      func(float64) float64 { return 0.5 }, b: func(t float64) float64 { return 1 / (t + 1) },
			expr: "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn, _ := irtest.Build(t, steadyProgram(tt.host, tt.update))
			fl := fn.Filter("x")
			if fl == nil || !fl.Limit {
				t.Fatalf("x has no limit filter: %+v", fl)
			}
			if fl.Expr != tt.expr {
				t.Errorf("closed form %q, want %q", fl.Expr, tt.expr)
			}
			m, b := fn.FilterValues(fl, fn.DefaultHypers())
			steady := gain.SteadyGain(m, b, fl.Target)
			sigma := 0.0
			for step := range 4000 {
				mt, bt := tt.m(float64(step)), tt.b(float64(step))
				sigma = mt*mt*sigma + bt*bt
			}
			if math.Abs(sigma-steady) > 1e-3*max(steady, 1e-3) {
				t.Errorf("steady value %v, but Σ_t reaches %v after 4000 steps", steady, sigma)
			}
		})
	}
}

func one(float64) float64 { return 1 }

// ademamixBeta3 is AdEMAMix's scheduled beta3 at the steady tests'
// defaults: beta1 = 0.9, beta3 = 0.5, warmup = 20.
func ademamixBeta3(t float64) float64 {
	f := min((t+1)/20, 1)
	return min(math.Exp(1/((1-f)/math.Log(0.9)+f/math.Log(0.5))), 0.5)
}

// TestSteadyValueRefused: a coefficient without a limit the rules
// derive leaves attenuation(x) an error at the call that says why, and
// points to attenuation_t.
func TestSteadyValueRefused(t *testing.T) {
	tests := []struct {
		name, host, update string
		want               []string
	}{
		{"it oscillates", "", "x = cos(t) / 2 * x + g", []string{"cos of a value that grows without bound oscillates", "no limit"}},
		{"the gain grows", "", "x = 0.5 * x + (t + 1) * g", []string{"grows without bound"}},
		{"a sum over the steps", "acc = acc + 1", "x = x / (acc + 1) + g", []string{"scalar acc reads its own value at the step before"}},
		{"a sign the ranges leave open", "", "x = 0.5 * x + min(k * t, 1) * g", []string{"non-zero, of one sign"}},
		{"a running mean: its limit is an integrator", "", "x = (1 - 1 / (t + 1)) * x + g / (t + 1)", []string{"attenuation(x)"}},
		// Found by review: each once gave a steady value the float64
		// recursion does not reach at some setting in the ranges.
		{"sqrt of values below 0 that tend to 0", "", "x = select(sqrt(-1 / (t + 1)) > -1, 0.5, 0.25) * x + g", []string{"no limit of sqrt"}},
		{"a limit that is -Inf at beta = 0", "", "x = 0.5 * x + exp(log(beta) / (t + 1)) * g", []string{"log(beta) may be infinite or NaN"}},
		{"a limit that overflows", "", "x = 0.5 * x + exp(710 - 700 / (t + 1)) * g", []string{"its limit is +Inf"}},
		{"a base below 0 raised to a growing exponent", "", "x = select((-0.5) ** (t + 0.5) < 1, 0.5, 0.25) * x + g", []string{"limit of a power"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs, err := irtest.Compile("test.dsl", []byte(steadyProgram(tt.host, tt.update)))
			if err != nil || len(errs) == 0 {
				t.Fatalf("Compile: errors %v, internal error %v; want an error", errs, err)
			}
			msg := errs.Error()
			for _, w := range append(tt.want, "changes from step to step", "attenuation_t(x)") {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}
