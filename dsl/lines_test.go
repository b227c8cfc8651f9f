package dsl_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/lang"
)

// TestAxes holds the axis the checker gives each state and local of a
// file with states per row and per column: an operation takes its
// operands' axis, a row value with a column value is per coordinate, and a
// reduction over the tensor is per-step uniform.
func TestAxes(t *testing.T) {
	src := []byte(`optimizer axes
hyper lr = 0.1
state r: rows = 0
state c: cols = 0
state m = 0
step {
	r = 0.5 * r + rowmean(g * g)
	c = c + colsum(g) * lr
	rn = r / mean(r)
	cn = sqrt(c) + lr
	rc = rn * cn
	u = sum(c) * norm(r)
	m = m + rc * u + r
	theta = theta - lr * m
}
`)
	type axis struct {
		Varying bool
		Axis    lang.Axis
	}
	want := map[string]axis{
		"r": {true, lang.Rows}, "c": {true, lang.Cols}, "m": {true, lang.Coords},
		"rn": {true, lang.Rows}, "cn": {true, lang.Cols}, "rc": {true, lang.Coords}, "u": {false, lang.Coords},
	}
	_, info, errs := dsl.Parse("axes.dsl", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := map[string]axis{}
	for _, obj := range append(info.States, info.Locals...) {
		got[obj.Name] = axis{obj.Varying, obj.Axis}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("axes (-want +got):\n%s", d)
	}
}
