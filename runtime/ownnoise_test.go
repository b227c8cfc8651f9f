package runtime_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fibergen/fibergen/runtime"
)

// TestNoNoiseWarns: settings that draw no noise (σ_DP = 0, or σ_w² = 0
// given directly and drawn) queue one warning that the output is not
// private, as set and as a load installs them; noise drawn, or a gradient
// the trainer privatized (Draw false), queue none.
func TestNoNoiseWarns(t *testing.T) {
	const warning = "the steps add no DP noise, so the output is not private"
	for _, c := range []struct {
		name string
		set  func(o *runtime.Optimizer) error
		warn bool
	}{
		{"σ_DP 0", func(o *runtime.Optimizer) error { return o.SetDP(runtime.DP{ClipNorm: 1, BatchSize: 4}) }, true},
		{"σ_DP underflows", func(o *runtime.Optimizer) error {
			return o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 1e-200, BatchSize: 4})
		}, true},
		{"σ_w² 0 drawn", func(o *runtime.Optimizer) error { return o.SetNoise(runtime.Noise{Draw: true}) }, true},
		{"σ_DP 1", func(o *runtime.Optimizer) error { return o.SetDP(testDP) }, false},
		{"privatized by the trainer", func(o *runtime.Optimizer) error { return o.SetNoise(runtime.Noise{}) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, _ := openDPSGD(t)
			if err := c.set(o); err != nil {
				t.Fatal(err)
			}
			ckpt := saveBytes(t, o)
			for _, when := range []string{"set", "loaded"} {
				w := o.Warnings()
				if got := len(w) == 1 && strings.Contains(w[0], warning); got != c.warn || !c.warn && len(w) > 0 {
					t.Errorf("%s: warnings %q, want the no-noise warning: %v", when, w, c.warn)
				}
				if when == "set" {
					o = openResumable(t)
					if err := o.LoadFrom(bytes.NewReader(ckpt)); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// TestDPVarianceOverflow: DP settings whose σ_w² is not a float64 are
// refused, not taken and reported as +Inf.
func TestDPVarianceOverflow(t *testing.T) {
	o, _ := openDPSGD(t)
	err := o.SetDP(runtime.DP{ClipNorm: 1e300, NoiseMultiplier: 1, BatchSize: 32})
	if err == nil || !strings.Contains(err.Error(), "too large for a float64") {
		t.Fatalf("SetDP of σ_w² = +Inf: %v, want refused", err)
	}
	if _, ok := o.DP(); ok {
		t.Error("the refused settings were taken")
	}
}

// TestLoadKeepsOwnNoise: a load into an optimizer given noise settings
// before it takes only a checkpoint of the same ones (a load that replaced
// them would run the trainer's next steps under noise it did not choose);
// one given none takes the checkpoint's.
func TestLoadKeepsOwnNoise(t *testing.T) {
	o, _ := openDPSGD(t)
	if err := o.SetDP(testDP); err != nil {
		t.Fatal(err)
	}
	ckpt := saveBytes(t, o)
	larger := testDP
	larger.NoiseMultiplier *= 2
	for _, c := range []struct {
		name string
		set  func(o *runtime.Optimizer) error
		msg  string // "": loads
	}{
		{"none", func(*runtime.Optimizer) error { return nil }, ""},
		{"the same", func(o *runtime.Optimizer) error { return o.SetDP(testDP) }, ""},
		{"a larger σ_DP", func(o *runtime.Optimizer) error { return o.SetDP(larger) }, "σ_DP = 2.2"},
		{"noise given directly", func(o *runtime.Optimizer) error { return o.SetNoise(runtime.Noise{SigmaW2: 1, Draw: true}) }, "σ_w² = 1, drawn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := openResumable(t)
			if err := c.set(r); err != nil {
				t.Fatal(err)
			}
			err := r.LoadFrom(bytes.NewReader(ckpt))
			if c.msg == "" {
				if d, _ := r.DP(); err != nil || !cmp.Equal(d, testDP) {
					t.Fatalf("load: %v, DP settings %+v; want the checkpoint's", err, d)
				}
				return
			}
			if !errors.Is(err, runtime.ErrCheckpointMismatch) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "σ_DP = 1.1") {
				t.Fatalf("load: %v, want a mismatch naming both settings (%s)", err, c.msg)
			}
		})
	}
}

// TestLoadOfNoSettingsKeepsOwn: a checkpoint saved before any noise
// settings, loaded into an optimizer given some, leaves them as they are.
func TestLoadOfNoSettingsKeepsOwn(t *testing.T) {
	o, _ := openDPSGD(t)
	ckpt := saveBytes(t, o)
	r := openResumable(t)
	if err := r.SetDP(testDP); err != nil {
		t.Fatal(err)
	}
	if err := r.LoadFrom(bytes.NewReader(ckpt)); err != nil {
		t.Fatal(err)
	}
	if d, ok := r.DP(); !ok || !cmp.Equal(d, testDP) {
		t.Errorf("DP settings after loading a checkpoint of none: %+v, %v; want the optimizer's own", d, ok)
	}
}

// openResumable is openDPSGD's optimizer, which may resume a checkpoint
// resumed before (each case here loads the same one).
func openResumable(t *testing.T) *runtime.Optimizer {
	t.Helper()
	o, err := runtime.Open(kernelDir(t, "dp_sgd"), runtime.Options{AllowResumeAgain: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	if _, err := o.Register("w", make([]float32, 10)); err != nil {
		t.Fatal(err)
	}
	return o
}
