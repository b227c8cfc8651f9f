package runtime_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// FuzzLoadFrom: any bytes given as a checkpoint load or are refused with an
// error, never a panic, and a refused load changes nothing.
func FuzzLoadFrom(f *testing.F) {
	open := func(t testing.TB) (*runtime.Optimizer, *runtime.Tensor) {
		o, err := runtime.Open("../generated/dp_sgd", runtime.Options{Backend: runtime.Go, AllowResumeAgain: true})
		if err != nil {
			t.Fatal(err)
		}
		tn, err := o.Register("w", []float32{1, 2, 3, 4, 5})
		if err != nil {
			t.Fatal(err)
		}
		return o, tn
	}
	o, tn := open(f)
	if err := errors.Join(o.SetDP(testDP), tn.SetGrad([]float32{1, 0, 0, 0, 0}), o.TrustClippedGradient(), o.Step()); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := o.SaveTo(&buf); err != nil {
		f.Fatal(err)
	}
	o.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("fibergen-checkpoint\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, tn := open(t)
		defer o.Close()
		if err := o.LoadFrom(bytes.NewReader(data)); err != nil {
			if p, _ := tn.Params(); o.Steps() != 0 || p[0] != 1 {
				t.Fatalf("a refused load changed the optimizer: %v", err)
			}
		}
	})
}
