package ir_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	. "github.com/fibergen/fibergen/ir"
)

func TestCheckObservation(t *testing.T) {
	src, err := os.ReadFile("../optimizers/fiber.dsl")
	if err != nil {
		t.Fatal(err)
	}
	fiber, errs, err := irtest.Compile("fiber.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatalf("Compile: %v %v", errs, err)
	}
	tests := []struct {
		name         string
		kappa, gamma float64
		want         string // "" for no error
	}{
		{"defaults", 0.6, 0.7, ""},
		{"boundary a = 1", 0.5, 1, ""},
		{"a = 0", 1, 0.7, ""},
		{"a > 1", 0.6, 0.4, "a = (1 - kappa) / (kappa * gamma) = 1.66667 at kappa=0.6, gamma=0.4, step 0, is outside [0, 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fiber.DefaultHypers()
			h[fiber.HyperIndex("kappa")], h[fiber.HyperIndex("gamma")] = tt.kappa, tt.gamma
			err := fiber.CheckObservation(h, 0)
			var ee *ExtrapolationError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckObservation: %v", err)
			case tt.want != "" && (!errors.As(err, &ee) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckObservation = %v, want an ExtrapolationError containing %q", err, tt.want)
			}
		})
	}
}

// TestCheckObservationPerStep checks a mixing weight that depends on t: it
// is checked at the step asked for.
func TestCheckObservationPerStep(t *testing.T) {
	fn := irtest.Lower(t, irtest.Program("hyper lr = 0.5\nobserve two_point(a = t - 1, lookahead = 1)", "theta = theta - lr * g"))
	h := fn.DefaultHypers()
	for step, bad := range []bool{true, false, false, true} {
		if err := fn.CheckObservation(h, step); (err != nil) != bad {
			t.Errorf("step %d: CheckObservation = %v, want an error: %v", step, err, bad)
		}
	}
}

func TestCheckObservationWithoutOne(t *testing.T) {
	fn := irtest.Lower(t, irtest.Program("hyper lr = 0.5", "theta = theta - lr * g"))
	if err := fn.CheckObservation(fn.DefaultHypers(), 0); err != nil || fn.ObservationAt(fn.DefaultHypers(), 0) != nil {
		t.Errorf("no observation: CheckObservation = %v", err)
	}
}
