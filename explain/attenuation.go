package explain

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/ir/poly"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/lower"
)

// Attenuation is the attenuation of one state that carries the DP noise
// linearly: its model z_t = M z_{t-1} + b w_t, the Lyapunov solution Σ, the
// closed form and its value at the hypers in use.
type Attenuation struct {
	Expr           *string    `json:"expr"`            // the closed form; null when numeric
	Value          *float64   `json:"value"`           // null when unstable
	SpectralRadius *float64   `json:"spectral_radius"` // null when not finite
	Stable         bool       `json:"stable"`
	Method         string     `json:"method"` // "symbolic" or "numeric: why"
	States         []string   `json:"states"` // z
	M              [][]string `json:"M"`
	B              []string   `json:"b"`
	Sigma          [][]string `json:"sigma,omitempty"`
	StableWhere    []string   `json:"stable_where,omitempty"` // conditions "… > 0" that together mean stable
	StabilityNote  string     `json:"stability_note,omitempty"`
	Used           bool       `json:"used"` // named by attenuation or attenuation_t in step
	// Feeding lists the states that feed the target at these hypers where
	// they are fewer than z (a coupling of 0 cuts the others off): the
	// spectral radius and the stability are theirs (gain.Feeding).
	Feeding []string `json:"feeding,omitempty"`
	// Limit, for a filter whose coefficients change from step to step,
	// says so: M and b are their limits as t grows, and the attenuation
	// is the steady value Σ_t tends to (lower.SteadyGain).
	Limit string `json:"limit,omitempty"`
}

// describeAttenuation solves the noise model of every state that carries
// the noise linearly; notLinear says why the others have none.
func describeAttenuation(fn *ir.Func, an *noise.Analysis, h []float64) (map[string]*Attenuation, map[string]string) {
	out, notLinear := map[string]*Attenuation{}, map[string]string{}
	for _, sn := range an.States {
		switch {
		case slices.Contains(fn.NoiseBuffers(), sn.State):
			continue // the noise filter's own (NoiseFilter)
		case sn.State == lang.LookaheadState && sn.Model == nil:
			notLinear[sn.State] = "no attenuation: the look-ahead point that two_point adds for the trainer: a function of theta, not a filter of the noise"
			continue
		case sn.Varying != nil:
			g, err := lower.SteadyGain(fn, an, sn)
			if err != nil {
				notLinear[sn.State] = "no steady attenuation: " + err.Error() + varyingCheck(fn, sn)
				continue
			}
			out[sn.State] = attenuationInfo(fn, g, h)
			out[sn.State].Limit = sn.Why + noise.VaryingNote(sn) + varyingCheck(fn, sn)
			continue
		case sn.Model == nil:
			notLinear[sn.State] = "no attenuation: " + sn.Why + noise.VaryingNote(sn) + varyingCheck(fn, sn) + growthNote(fn, sn.State, h)
			continue
		}
		g, err := noise.Solve(sn.Model, an.Symbols)
		if err != nil {
			notLinear[sn.State] = "no attenuation: " + err.Error()
			continue
		}
		out[sn.State] = attenuationInfo(fn, g, h)
	}
	return out, notLinear
}

func attenuationInfo(fn *ir.Func, g *noise.Gain, h []float64) *Attenuation {
	syms := g.Symbols
	at := g.At(fn, h)
	a := &Attenuation{Stable: at.Stable, Method: "symbolic", States: g.Model.States, M: fracMatrix(g.Model.M, syms),
		B: fracRow(g.Model.B, syms), StableWhere: lower.ConditionStrings(g.Conditions, syms), StabilityNote: g.StabilityNote, Used: named(fn, g.Model.State)}
	if x := lower.ClosedForm(g); x != nil {
		s := dsl.ExprString(x)
		a.Expr, a.Sigma = &s, fracMatrix(g.Sigma, syms)
	} else {
		a.Method = "numeric: " + g.Numeric
	}
	a.Value, a.SpectralRadius = finite(at.A), finite(at.SpectralRadius)
	if idx := gain.Feeding(at.M, len(at.B), g.Model.Target); len(idx) < len(at.B) {
		for _, i := range idx {
			a.Feeding = append(a.Feeding, g.Model.States[i])
		}
	}
	return a
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func fracRow(row []poly.Frac, syms []*ir.Value) []string {
	out := make([]string, len(row))
	for i, f := range row {
		out[i] = lower.FracString(f, syms)
	}
	return out
}

func fracMatrix(m [][]poly.Frac, syms []*ir.Value) [][]string {
	out := make([][]string, len(m))
	for i, row := range m {
		out[i] = fracRow(row, syms)
	}
	return out
}

// printAttenuation writes the derivation of each attenuation.
func printAttenuation(w io.Writer, x *Explanation) {
	if len(x.Attenuation) == 0 && len(x.notLinear) == 0 {
		return
	}
	fmt.Fprintf(w, "\nnoise attenuation (the DP noise w in g, through each linear filter: z_t = M z_{t-1} + b w_t):\n")
	for _, s := range x.States {
		a := x.Attenuation[s.Name]
		if a == nil {
			if why := x.notLinear[s.Name]; why != "" {
				fmt.Fprintf(w, "  %s: %s\n", s.Name, why)
			}
			continue
		}
		printGain(w, s.Name, a)
	}
}

func printGain(w io.Writer, state string, a *Attenuation) {
	fmt.Fprintf(w, "  %s: z = (%s)\n", state, strings.Join(a.States, ", "))
	if a.Limit != "" {
		fmt.Fprintf(w, "    %s; M and b below are the limits of its coefficients as t grows, and attenuation(%s) the steady value attenuation_t(%s) tends to\n", a.Limit, state, state)
	}
	fmt.Fprintf(w, "    M = %s\n    b = [%s]\n", matrixString(a.M), strings.Join(a.B, ", "))
	if a.Sigma != nil {
		fmt.Fprintf(w, "    Σ = M Σ Mᵀ + b bᵀ gives\n")
		for i, row := range a.Sigma {
			for j := i; j < len(row); j++ {
				fmt.Fprintf(w, "      Σ[%s][%s] = %s\n", a.States[i], a.States[j], row[j])
			}
		}
		fmt.Fprintf(w, "    attenuation(%s) = %s", state, *a.Expr)
	} else {
		fmt.Fprintf(w, "    attenuation(%s) is solved exactly at each hyper setting on the host (%s)", state, a.Method)
	}
	switch {
	case a.Value != nil:
		fmt.Fprintf(w, " = %.17g here\n", *a.Value)
	default:
		fmt.Fprintf(w, ", undefined here\n")
	}
	rho := "not finite"
	if a.SpectralRadius != nil {
		rho = fmt.Sprintf("%.6g", *a.SpectralRadius)
	}
	of, where := "", "stable exactly where"
	if len(a.Feeding) > 0 {
		of = fmt.Sprintf(" of (%s), the states that feed %s at these hypers,", strings.Join(a.Feeding, ", "), state)
		where = "the whole of z is stable exactly where"
	}
	fmt.Fprintf(w, "    spectral radius%s %s: %s\n", of, rho, map[bool]string{true: "stable", false: "UNSTABLE"}[a.Stable])
	if len(a.StableWhere) > 0 {
		fmt.Fprintf(w, "    %s %s\n", where, strings.Join(a.StableWhere, " and "))
	}
	if a.StabilityNote != "" {
		fmt.Fprintf(w, "    (%s)\n", a.StabilityNote)
	}
}

func matrixString(m [][]string) string {
	rows := make([]string, len(m))
	for i, r := range m {
		rows[i] = "[" + strings.Join(r, ", ") + "]"
	}
	return "[" + strings.Join(rows, ", ") + "]"
}

// named reports whether attenuation or attenuation_t names state s: its
// filter is not one checked only for growth.
func named(fn *ir.Func, s string) bool {
	fl := fn.Filter(s)
	return fl != nil && !fl.Bounded
}

// growthNote says that the own recursion of state s, which has no
// attenuation, is checked for growth (a Bounded filter: lower's
// boundFilters), with its spectral radius at hypers h; "" where it is not.
func growthNote(fn *ir.Func, s string, h []float64) string {
	fl := fn.Filter(s)
	if fl == nil || !fl.Bounded {
		return ""
	}
	m, _ := fn.FilterValues(fl, h)
	return fmt.Sprintf("; its own recursion is checked for growth: spectral radius %.6g here, at most 1 allowed", gain.FeedingRadius(m, len(fl.States), fl.Target))
}

// varyingCheck says how the host checks the time-varying filter of sn at
// every step (ir.Func.Varying), or "" for none.
func varyingCheck(fn *ir.Func, sn noise.StateNoise) string {
	for _, fl := range fn.Varying {
		if sn.Varying != nil && fl.Over(sn.Varying.States) {
			if len(fl.Stability) == 0 {
				return "; the host checks its spectral radius before every step"
			}
			return "; the host checks before every step that it does not grow there (stable where " + strings.Join(fl.Stability, " and ") + ")"
		}
	}
	return ""
}
