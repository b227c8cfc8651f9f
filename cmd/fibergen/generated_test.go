package main

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/fibergen/fibergen/generated/disk"
	"github.com/fibergen/fibergen/generated/dp_adamw"
	"github.com/fibergen/fibergen/generated/dp_sgd"
	"github.com/fibergen/fibergen/generated/fiber"
	"github.com/fibergen/fibergen/internal/floatbits"
)

// updater is the Optimizer of a generated package.
type updater interface {
	Update(theta, g []float32, sigmaW2 float64) error
}

// newUpdater makes the generated optimizer name for n coordinates with
// one hyper overridden.
func newUpdater(t *testing.T, name, hyper string, value float64, n int) updater {
	t.Helper()
	var o updater
	var err error
	switch name {
	case "disk":
		h := disk.Defaults()
		if err = h.Set(hyper, value); err == nil {
			o, err = disk.New(h, n)
		}
	case "dp_adamw":
		h := dp_adamw.Defaults()
		if err = h.Set(hyper, value); err == nil {
			o, err = dp_adamw.New(h, n)
		}
	case "dp_sgd":
		h := dp_sgd.Defaults()
		if err = h.Set(hyper, value); err == nil {
			o, err = dp_sgd.New(h, n)
		}
	case "fiber":
		h := fiber.Defaults()
		if err = h.Set(hyper, value); err == nil {
			o, err = fiber.New(h, n)
		}
	default:
		t.Fatalf("no generated package for %s", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestRunMatchesGenerated checks that fibergen run (the IR interpreter)
// gives bit for bit what the checked-in generated Go packages give.
func TestRunMatchesGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const steps, n = 8, 33
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	for _, sigma := range []float64{0, 0.25} {
		for _, noise := range []string{"off", "on"} {
			for _, name := range shipped {
				checkRunMatchesGenerated(t, name, noise, sigma, theta, grads, steps)
			}
		}
	}
}

// checkRunMatchesGenerated compares fibergen run with --set lr=0.05, the
// noise setting and seed 42 against the generated package.
func checkRunMatchesGenerated(t *testing.T, name, noise string, sigma float64, theta, grads []float32, steps int) {
	n := len(theta)
	got := runOut(t, name, theta, grads, steps, "--noise", noise, "--seed", "42", "--sigma-w2", formatFloat(sigma), "--set", "lr=0.05")
	want := slices.Clone(theta)
	o := newUpdater(t, name, "lr", 0.05, n)
	opt := reflect.ValueOf(o).Elem()
	opt.FieldByName("Noise").SetBool(noise == "on")
	opt.FieldByName("Seed").SetUint(42)
	for s := range steps {
		if err := o.Update(want, grads[s*n:(s+1)*n], sigma); err != nil {
			t.Fatal(err)
		}
	}
	if d := floatbits.Diff(want, got); d != "" {
		t.Errorf("%s noise %s sigma_w2 %v: theta %s (want: what the generated code gives)", name, noise, sigma, d)
	}
}

func formatFloat(x float64) string {
	return strconv.FormatFloat(x, 'g', -1, 64)
}
