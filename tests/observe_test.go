package tests

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/generated/fiber"
)

// TestGeneratedExtrapolationGuard checks the convexity guard of a generated
// package: Update refuses a two_point weight a outside [0, 1], changing
// nothing, until the Optimizer opts in.
func TestGeneratedExtrapolationGuard(t *testing.T) {
	h := fiber.Defaults()
	h.Gamma = 0.4 // a = (1 − 0.6)/(0.6·0.4) = 1.67
	if err := fiber.CheckObservation(h, 0); err == nil || !strings.Contains(err.Error(), "is outside [0, 1]") {
		t.Fatalf("CheckObservation = %v", err)
	}
	o, err := fiber.New(h, 3)
	if err != nil {
		t.Fatal(err)
	}
	theta, g := []float32{1, 2, 3}, []float32{0.1, -0.2, 0.3}
	before := slices.Clone(theta)
	if err := o.Update(theta, g, 0); err == nil || !strings.Contains(err.Error(), "Optimizer.AllowExtrapolation") {
		t.Fatalf("Update = %v, want the extrapolation error", err)
	}
	if o.T != 0 || !slices.Equal(theta, before) {
		t.Fatalf("the refused Update changed T = %d, theta = %v", o.T, theta)
	}
	o.AllowExtrapolation = true
	if err := o.Update(theta, g, 0); err != nil || o.T != 1 {
		t.Fatalf("Update with AllowExtrapolation = %v (T = %d)", errors.Unwrap(err), o.T)
	}
}

// TestGeneratedLookaheadPoint checks LookaheadPoint: theta before the first
// step, then θ_{t+1} + γ·(θ_{t+1} − θ_t) from the step.
func TestGeneratedLookaheadPoint(t *testing.T) {
	o, err := fiber.New(fiber.Defaults(), 3)
	if err != nil {
		t.Fatal(err)
	}
	o.Noise = false
	theta := []float32{1, 2, 3}
	if p := o.LookaheadPoint(theta); &p[0] != &theta[0] {
		t.Error("LookaheadPoint before the first step is not theta")
	}
	prev := slices.Clone(theta)
	if err := o.Update(theta, []float32{0.5, -0.5, 0.25}, 0); err != nil {
		t.Fatal(err)
	}
	gamma := float32(o.Hypers.Gamma)
	for i, got := range o.LookaheadPoint(theta) {
		if want := theta[i] + float32(gamma*(theta[i]-prev[i])); got != want {
			t.Errorf("lookahead[%d] = %v, want %v", i, got, want)
		}
	}
}
