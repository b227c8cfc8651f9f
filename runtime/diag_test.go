package runtime_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// TestDiagnosticsOffByDefault checks that clamp_mass is off until asked for
// and that an optimizer that declares none refuses it.
func TestDiagnosticsOffByDefault(t *testing.T) {
	theta, grads := inputs(1)
	o, ts := openFiber(t, runtime.Options{}, theta)
	if err := stepAll(o, ts, grads[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := o.ClampMass(); err == nil || !strings.Contains(err.Error(), "off") {
		t.Errorf("ClampMass with diagnostics off: %v, want an error", err)
	}
	if err := o.EnableDiagnostics(); err != nil {
		t.Fatal(err)
	}
	if _, err := o.ClampMass(); err == nil {
		t.Error("ClampMass before a step with diagnostics on succeeded")
	}
	sgd, err := runtime.Open(kernelDir(t, "dp_sgd"), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sgd.Close()
	if err := sgd.EnableDiagnostics(); err == nil || !strings.Contains(err.Error(), "declares no diagnostic clamp_mass") {
		t.Errorf("EnableDiagnostics on dp_sgd: %v", err)
	}
}

// TestDiagnosticsLeaveStepsAlone runs fiber with clamp_mass off and on, on
// the host kernel and on the reference with one and three threads: the
// parameters agree bit for bit after every step whether the diagnostic is
// on or off, and every backend reports the same clamp_mass bits.
func TestDiagnosticsLeaveStepsAlone(t *testing.T) {
	const steps = 5
	theta, grads := inputs(steps)
	off, offTs := openFiber(t, runtime.Options{}, theta)
	var ons []*runtime.Optimizer
	var onTs [][]*runtime.Tensor
	for _, opts := range []runtime.Options{{}, {Backend: runtime.Go, Threads: 1}, {Backend: runtime.Go, Threads: 3}} {
		o, ts := openFiber(t, opts, theta)
		if err := o.SetHyper("eps_v", 1e-4); err != nil { // a floor that some coordinates hit
			t.Fatal(err)
		}
		if err := o.EnableDiagnostics(); err != nil {
			t.Fatal(err)
		}
		ons, onTs = append(ons, o), append(onTs, ts)
	}
	if err := off.SetHyper("eps_v", 1e-4); err != nil {
		t.Fatal(err)
	}
	for step := range steps {
		if err := stepAll(off, offTs, grads[step]); err != nil {
			t.Fatal(err)
		}
		want := flatParams(t, offTs)
		var masses []float64
		for i, o := range ons {
			if err := stepAll(o, onTs[i], grads[step]); err != nil {
				t.Fatal(err)
			}
			if !sameBits(flatParams(t, onTs[i]), want) {
				t.Fatalf("step %d: %s with diagnostics on differs from off", step, o.Backend())
			}
			v, err := o.ClampMass()
			if err != nil {
				t.Fatal(err)
			}
			masses = append(masses, v)
		}
		for i, v := range masses {
			if math.Float64bits(v) != math.Float64bits(masses[0]) || !(v > 0 && v < 1) {
				t.Fatalf("step %d: clamp_mass %v on %s, %v on %s (want the same, in (0, 1))", step, v, ons[i].Backend(), masses[0], ons[0].Backend())
			}
		}
	}
}
