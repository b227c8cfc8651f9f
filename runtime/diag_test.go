package runtime_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/pipeline"
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

// TestAttenuations checks the attenuation the runtime reports for fiber's
// filtered gradient gt against the paper's closed form (2−ω)/(4−3ω) and the
// finite-time sum Σ_{j≤t} h_j² of the filter's impulse response h_0 = ω,
// h_1 = 2ω(1−ω).
func TestAttenuations(t *testing.T) {
	theta, grads := inputs(2)
	o, ts := openFiber(t, runtime.Options{}, theta)
	if err := o.SetHypers(map[string]float64{"omega": 0.5}); err != nil {
		t.Fatal(err)
	}
	if got := o.Attenuations(); len(got) != 1 || got[0].State != "gt" || got[0].Steady != 1.5/2.5 || got[0].Finite == nil || *got[0].Finite != 0 {
		t.Errorf("before a step: %+v, want gt, steady 0.6, finite 0", got)
	}
	for i, finite := range []float64{0.25, 0.25 + 0.25} { // ω = 0.5: h_0 = h_1 = 0.5
		if err := stepAll(o, ts, grads[i]); err != nil {
			t.Fatal(err)
		}
		if got := o.Attenuations()[0]; got.Finite == nil || math.Abs(*got.Finite-finite) > 1e-15 || math.Abs(got.Steady-0.6) > 1e-15 {
			t.Errorf("after step %d: %+v, want finite %v, steady 0.6", i, got, finite)
		}
	}
}

// TestAttenuationsWithoutFinite checks that a filter started from g, and
// the limit of a time-varying one, report their steady attenuation and no
// finite-time one: the first assumes a start from the buffer, the second
// is the covariance the host follows in attenuation_t's scalars.
func TestAttenuationsWithoutFinite(t *testing.T) {
	for _, tt := range []struct {
		name, decls, update string
		steady              float64
	}{
		{"started", "state gt = g", "gt = (1 - k) * gt + k * g", 0.6 / 1.4},
		{"varying", "state gt = 0", "gt = (1 - k) * select(t < 5, 0.5, 1) * gt + k * g", 0.6 / 1.4},
	} {
		src := []byte("optimizer " + tt.name + "\nhyper k = 0.6 in (0, 1]\n" + tt.decls + "\n" +
			"step {\n\t" + tt.update + "\n\ttheta = theta - 0.1 * gt * (1 + 0 * attenuation(gt))\n}\n")
		got := openManifestOnly(t, tt.name, src).Attenuations()
		if len(got) != 1 || got[0].State != "gt" || math.Abs(got[0].Steady-tt.steady) > 1e-15 || got[0].Finite != nil {
			t.Errorf("%s: got %+v, want gt, steady %v, no finite", tt.name, got, tt.steady)
		}
	}
}

// openManifestOnly compiles src and opens it on the go backend, which
// reads the manifest alone.
func openManifestOnly(t *testing.T, name string, src []byte) *runtime.Optimizer {
	t.Helper()
	u, errs, err := pipeline.Compile(name+".dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatalf("%v %v", errs, err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), u.Manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := runtime.Open(dir, runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}
