package runtime_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// TestConcurrentSteps steps one optimizer from several goroutines at once,
// each also reading it: the methods are serialised, so every step has its
// own step counter, and so its own noise, and the result is bit for bit
// that of the same steps taken one after another. (Run with -race to see
// that nothing races as well.)
func TestConcurrentSteps(t *testing.T) {
	const workers, each = 4, 10
	theta, grads := inputs(1)
	// The steps reuse one gradient: only the step counter matters here.
	reuse := runtime.Options{AllowGradientReuse: true}
	serial, sts := openFiber(t, reuse, theta)
	shared, shts := openFiber(t, reuse, theta)
	for _, o := range []struct {
		o  *runtime.Optimizer
		ts []*runtime.Tensor
	}{{serial, sts}, {shared, shts}} {
		if err := stepAll(o.o, o.ts, grads[0]); err != nil {
			t.Fatal(err)
		}
	}
	for range workers * each {
		if err := serial.Step(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if err := shared.Step(); err != nil {
					t.Error(err)
				}
				_, _ = shared.Steps(), shared.Hypers()
				if _, err := shts[0].Params(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got, want := shared.Steps(), serial.Steps(); got != want {
		t.Fatalf("Steps %d after %d concurrent steps, want %d", got, workers*each, want)
	}
	for i := range sts {
		a, _ := sts[i].Params()
		b, _ := shts[i].Params()
		if !slices.Equal(a, b) {
			t.Errorf("tensor %s differs from the serial run after concurrent steps", sts[i].Name)
		}
	}
}
