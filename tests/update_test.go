package tests

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/generated/dp_sgd"
	"github.com/fibergen/fibergen/generated/fiber"
)

// TestUpdateRefusesBadArguments: a generated package's Update refuses a
// noise variance that is NaN, negative or infinite, and a theta or g of
// another length, with an error and no change, where it used to panic or
// step on a NaN noise.
func TestUpdateRefusesBadArguments(t *testing.T) {
	o, err := fiber.New(fiber.Defaults(), 4)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dp_sgd.New(dp_sgd.Defaults(), 4)
	if err != nil {
		t.Fatal(err)
	}
	theta, g := []float32{1, 2, 3, 4}, []float32{0.1, 0.1, 0.1, 0.1}
	for _, c := range []struct {
		name     string
		theta, g []float32
		sigmaW2  float64
		want     string
	}{
		{"NaN variance", theta, g, math.NaN(), "sigmaW2 = NaN"},
		{"negative variance", theta, g, -1e-6, "sigmaW2 = -1e-06"},
		{"infinite variance", theta, g, math.Inf(1), "sigmaW2 = +Inf"},
		{"short g", theta, g[:3], 0, "g 3"},
		{"long theta", append(slices.Clone(theta), 5), append(slices.Clone(g), 0), 0, "theta has 5 values"},
	} {
		before := slices.Clone(c.theta)
		for name, update := range map[string]func([]float32, []float32, float64) error{"fiber": o.Update, "dp_sgd": s.Update} {
			if name == "dp_sgd" && c.name == "long theta" {
				continue // without states, theta and g only need the same length: this one would step
			}
			err := update(c.theta, c.g, c.sigmaW2)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: %v, want an error saying %q", name, c.name, err, c.want)
			}
			if !slices.Equal(c.theta, before) {
				t.Errorf("%s, %s: theta changed", name, c.name)
			}
		}
	}
	if o.T != 0 || s.T != 0 {
		t.Errorf("refused updates advanced the step counter: fiber %d, dp_sgd %d", o.T, s.T)
	}
}
