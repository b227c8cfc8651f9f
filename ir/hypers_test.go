package ir_test

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	. "github.com/fibergen/fibergen/ir"
	"github.com/google/go-cmp/cmp"
)

// hyperFunc has an open range, a half-open range and no range.
func hyperFunc(t *testing.T) *Func {
	return irtest.LowerStep(t, "hyper lr = 0.1 in (0, inf)\nhyper beta = 0.9 in [0, 1) alias betas[0]\nhyper wd = -1 alias weight_decay", "theta = theta - lr * beta * wd * g")
}

func TestDefaultHypers(t *testing.T) {
	fn := hyperFunc(t)
	h := fn.DefaultHypers()
	if len(h) != 3 || h[0] != 0.1 || h[1] != 0.9 || h[2] != -1 {
		t.Fatalf("DefaultHypers = %v, want [0.1 0.9 -1]", h)
	}
	h[0] = 7
	if fn.DefaultHypers()[0] != 0.1 || fn.Hypers[0].Default != 0.1 {
		t.Error("changing the returned slice changed the defaults")
	}
	if names := strings.Join(fn.HyperNames(), " "); names != "lr beta wd" {
		t.Errorf("HyperNames = %s", names)
	}
	if fn.HyperIndex("beta") != 1 || fn.HyperIndex("mu") != -1 {
		t.Errorf("HyperIndex(beta) = %d, HyperIndex(mu) = %d", fn.HyperIndex("beta"), fn.HyperIndex("mu"))
	}
}

func TestApplySettings(t *testing.T) {
	good := []struct {
		settings []string
		want     []float64
	}{
		{nil, []float64{0.1, 0.9, -1}},
		{[]string{"lr=0.5", "beta=0"}, []float64{0.5, 0, -1}},
		{[]string{"lr=0.5", "lr=0.25"}, []float64{0.25, 0.9, -1}},
		{[]string{"wd=-1e300"}, []float64{0.1, 0.9, -1e300}},
		{[]string{"lr=1e300"}, []float64{1e300, 0.9, -1}},
	}
	fn := hyperFunc(t)
	for _, tt := range good {
		h, err := fn.ApplySettings(tt.settings)
		if err != nil || cmp.Diff(tt.want, h) != "" {
			t.Errorf("ApplySettings(%q) = %v, %v; want %v", tt.settings, h, err, tt.want)
		}
	}
	bad := []struct {
		setting string
		want    string
	}{
		{"mu=1", "p has no hyper mu (its hypers: lr, beta, wd)"},
		{"weight_decay=1", "p has no hyper weight_decay: weight_decay is the alias a binding takes (PyTorch's name) for wd; set wd here"},
		{"betas=1", "betas is the alias a binding takes (PyTorch's name) for beta; set beta here"},
		{"lr=0", "hyper lr = 0 is outside its range (0, inf)"},
		{"lr=-0", "outside its range (0, inf)"},
		{"lr=-1", "outside its range (0, inf)"},
		{"beta=1", "hyper beta = 1 is outside its range [0, 1)"},
		{"beta=-0.1", "outside its range [0, 1)"},
		{"lr=nan", "value must be finite"},
		{"lr=inf", "value must be finite"},
		{"wd=-inf", "value must be finite"},
		{"wd=NaN", "value must be finite"},
		{"lr", "malformed setting"},
	}
	for _, tt := range bad {
		h, err := fn.ApplySettings([]string{"beta=0.5", tt.setting})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ApplySettings(%q) = %v, %v; want an error mentioning %q", tt.setting, h, err, tt.want)
		}
		if h != nil {
			t.Errorf("ApplySettings(%q) returned hypers %v with its error", tt.setting, h)
		}
	}
}

func TestSetHyperLeavesValuesOnError(t *testing.T) {
	fn := hyperFunc(t)
	h := fn.DefaultHypers()
	if err := fn.SetHyper(h, "lr", 0); err == nil {
		t.Fatal("SetHyper(lr, 0) accepted a value outside (0, inf)")
	}
	if err := fn.SetHyper(h, "nope", 1); err == nil {
		t.Fatal("SetHyper(nope) accepted an unknown hyper")
	}
	if diff := cmp.Diff(fn.DefaultHypers(), h); diff != "" {
		t.Errorf("failed SetHyper calls changed h (-defaults +h):\n%s", diff)
	}
	if err := fn.SetHyper(h, "wd", 3); err != nil || h[2] != 3 {
		t.Errorf("SetHyper(wd, 3): %v, h = %v", err, h)
	}
}
