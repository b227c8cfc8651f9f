package noise

import (
	"fmt"
	"math"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/poly"
)

// Fixed is the model shaped as m whose entries are the uniform values
// entries (M row by row, then b), functions of the hypers alone: the
// limit of a time-varying filter as the steps grow (its steady filter).
// Its fractions are over symbols of its own, returned with it.
func Fixed(m *Model, entries []*ir.Value) (*Model, []*ir.Value, error) {
	a := &noiseAnalyzer{symIndex: map[string]int{}, forms: map[*ir.Value]form{}}
	k := len(m.States)
	out := &Model{State: m.State, States: m.States, Target: m.Target, M: make([][]poly.Frac, k), B: make([]poly.Frac, k)}
	for i, e := range entries {
		c := a.uniformCoef(e)
		if c.moving != "" {
			return nil, nil, fmt.Errorf("its limit `%s` %s", ir.ExprString(e), c.moving)
		}
		if i < k*k {
			out.M[i/k] = append(out.M[i/k], c.f)
		} else {
			out.B[i-k*k] = c.f
		}
	}
	return out, a.symbols, nil
}

// uniformCoef is the coefficient of the uniform value v, its operands'
// first.
func (a *noiseAnalyzer) uniformCoef(v *ir.Value) coef {
	if f, ok := a.forms[v]; ok {
		return f.c
	}
	for _, x := range v.Args {
		a.uniformCoef(x)
	}
	c := a.coefOf(v)
	if v.Op == ir.OpConst && (math.IsNaN(v.Const) || math.IsInf(v.Const, 0)) {
		c = coef{moving: "is not a finite number"} // decimalRat would read it as 0
	}
	a.forms[v] = form{kind: uniformForm, c: c}
	return c
}
