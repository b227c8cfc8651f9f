package runtime_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/generated/dp_sgd"
	"github.com/fibergen/fibergen/runtime"
)

// exampleRows returns batch rows of n per-example gradients whose norms
// spread around 1: example ξ is scaled by 10^(ξ mod 5 − 2); every fourth
// example is zero.
func exampleRows(seed uint64, batch, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	rows := make([]float32, batch*n)
	for ex := range batch {
		scale := math.Pow(10, float64(ex%5-2)) / math.Sqrt(float64(n))
		if ex%4 == 3 {
			scale = 0
		}
		for i := range n {
			rows[ex*n+i] = float32(scale * r.NormFloat64())
		}
	}
	return rows
}

// openPrivatizing opens name with the tensors of tensorSizes at zero, the
// DP settings {C 1, σ 0, B batch} and lr 1 where it has one.
func openPrivatizing(t *testing.T, name string, backend runtime.Backend, batch int) (*runtime.Optimizer, []*runtime.Tensor) {
	t.Helper()
	n := 0
	for _, s := range tensorSizes {
		n += s
	}
	o, ts := openSized(t, kernelDir(t, name), runtime.Options{Backend: backend}, tensorSizes, make([]float32, n))
	if err := o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 0, BatchSize: batch}); err != nil {
		t.Fatal(err)
	}
	return o, ts
}

// TestPrivatizeMatchesGenerated checks, on the host kernel (cpu) and the
// Go reference (go), that Privatize writes into the gradient buffer the
// bits of the generated package's Privatize, for k = B examples and for the
// k ≠ B of Poisson sampling (none, fewer, more), the sum divided by B:
// DP-SGD with lr 1 and no noise from θ = 0 leaves θ = −g exactly.
func TestPrivatizeMatchesGenerated(t *testing.T) {
	const batch = 9
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
		for _, k := range []int{batch, 0, 5, 2*batch + 1} {
			t.Run(fmt.Sprintf("%s/k=%d", backend, k), func(t *testing.T) { checkPrivatizeRows(t, backend, batch, k) })
		}
	}
}

// checkPrivatizeRows privatizes k examples with DP.BatchSize batch on
// backend and compares the step's −θ with dp_sgd.Privatize.
func checkPrivatizeRows(t *testing.T, backend runtime.Backend, batch, k int) {
	o, ts := openPrivatizing(t, "dp_sgd", backend, batch)
	if err := o.SetHyper("lr", 1); err != nil {
		t.Fatal(err)
	}
	cur := exampleRows(1, k, o.Len())
	st, err := o.Privatize(cur, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
	if o.Backend() != backend {
		t.Fatalf("ran on %s", o.Backend())
	}
	want := make([]float32, o.Len())
	if bad := dp_sgd.Privatize(want, cur, nil, k, float32(batch), 0, 1); bad >= 0 {
		t.Fatalf("example %d not finite", bad)
	}
	got := flatParams(t, ts)
	for i := range got {
		got[i] = -got[i]
	}
	// θ = 0 − g, so −θ is g up to the sign of a zero, which == ignores.
	nonzero := slices.ContainsFunc(want, func(x float32) bool { return x != 0 })
	if nonzero != (k > 0) || !slices.Equal(got, want) {
		t.Fatalf("clipped sum over B differs from dp_sgd.Privatize: %v… vs %v…", got[:4], want[:4])
	}
	if len(st.Scales) != k || k >= 5 && (st.Clipped == 0 || st.Clipped == k || st.Scales[3] != 1) {
		t.Errorf("stats %+v: want %d scales, some examples clipped, example 3 (zero) at scale 1", st, k)
	}
}

// TestPrivatizeTwoPointBackendsAgree checks that DiSK's two-point
// privatization and the steps after it give the same bits on the host
// kernel and the Go reference, with k = B examples and the k ≠ B of Poisson
// sampling, and that PrivatizeScaled with the scales Privatize returned
// does too.
func TestPrivatizeTwoPointBackendsAgree(t *testing.T) {
	const batch = 6
	rows := []int{batch, 0, 2*batch + 1, 2}
	var results [][]float32
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go, runtime.CPU} {
		o, ts := openPrivatizing(t, "disk", backend, batch)
		for step, k := range rows {
			cur, look := exampleRows(uint64(10+step), k, o.Len()), exampleRows(uint64(20+step), k, o.Len())
			st, err := o.Privatize(cur, look)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) == 2 { // the third run: the scales given
				o.IssueScales(st.Scales)
				if st, err = o.PrivatizeScaled(cur, look, st.Scales); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.Step(); err != nil {
				t.Fatal(err)
			}
		}
		results = append(results, flatParams(t, ts))
	}
	for i := 1; i < len(results); i++ {
		if !slices.Equal(results[0], results[i]) {
			t.Errorf("run %d differs from the host kernel's", i)
		}
	}
}

// TestPrivatizeNoExamples checks that a Poisson batch that drew no
// examples sets the gradient to zero, whatever SetGrad put there, on both
// host backends, nil rows included (a two-point optimizer needs no look
// then).
func TestPrivatizeNoExamples(t *testing.T) {
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
		for _, name := range []string{"disk", "dp_sgd"} {
			o, ts := openPrivatizing(t, name, backend, 4)
			for _, tn := range ts {
				if err := tn.SetGrad(slices.Repeat([]float32{0.5}, tn.Len)); err != nil {
					t.Fatal(err)
				}
			}
			st, err := o.Privatize(nil, nil)
			if err != nil {
				t.Fatalf("%s/%s: %v", backend, name, err)
			}
			for _, tn := range ts {
				g, err := tn.Grad()
				if err != nil {
					t.Fatal(err)
				}
				if slices.ContainsFunc(g, func(x float32) bool { return math.Float32bits(x) != 0 }) || len(st.Scales) != 0 {
					t.Errorf("%s/%s: tensor %s: gradient %v…, %d scales; want +0 and none", backend, name, tn.Name, g[:min(4, len(g))], len(st.Scales))
				}
			}
		}
	}
}

// TestPrivatizeErrors checks the refused calls: each returns an error and
// leaves the gradient SetGrad put there, so the next step is the one it
// would have been.
func TestPrivatizeErrors(t *testing.T) {
	const batch = 3
	nan := func(rows []float32) []float32 { rows[len(rows)/2] = float32(math.NaN()); return rows }
	for _, c := range []struct {
		name, opt string
		call      func(o *runtime.Optimizer) error
		msg       string
	}{
		{"short cur", "disk", func(o *runtime.Optimizer) error {
			return privatize(o, exampleRows(1, batch, o.Len())[1:], exampleRows(2, batch, o.Len()))
		}, "cur holds"},
		{"no look", "disk", func(o *runtime.Optimizer) error { return privatize(o, exampleRows(1, batch, o.Len()), nil) }, "look-ahead point too"},
		{"look without observation", "dp_sgd", func(o *runtime.Optimizer) error {
			return privatize(o, exampleRows(1, batch, o.Len()), exampleRows(2, batch, o.Len()))
		}, "no two-point observation"},
		{"NaN", "disk", func(o *runtime.Optimizer) error {
			return privatize(o, exampleRows(1, batch, o.Len()), nan(exampleRows(2, batch, o.Len())))
		}, "example 1 has a NaN"},
		{"scale above 1", "dp_sgd", func(o *runtime.Optimizer) error {
			_, err := o.PrivatizeScaled(exampleRows(1, batch, o.Len()), nil, []float32{1, 1.5, 0})
			return err
		}, "not in [0, 1]"},
		{"NaN with the scales given", "disk", func(o *runtime.Optimizer) error {
			scales, err := o.ClipScales([]float64{1, 1, 1}, []float64{1, 1, 1}, []float64{0, 0, 0})
			if err != nil {
				return err
			}
			_, err = o.PrivatizeScaled(exampleRows(1, batch, o.Len()), nan(exampleRows(2, batch, o.Len())), scales)
			return err
		}, "example 1 has a NaN"},
		{"scales made up", "dp_sgd", func(o *runtime.Optimizer) error {
			_, err := o.PrivatizeScaled(exampleRows(1, batch, o.Len()), nil, []float32{1, 1, 1})
			return err
		}, "the scales given are not those ClipScales returned last"},
		{"scales given twice", "dp_sgd", func(o *runtime.Optimizer) error {
			scales, err := o.ClipScales(nil, []float64{4, 1, 2}, nil)
			if err == nil {
				_, err = o.PrivatizeTo(make([]float32, o.Len()), exampleRows(3, batch, o.Len()), nil, scales)
			}
			if err == nil {
				_, err = o.PrivatizeScaled(exampleRows(3, batch, o.Len()), nil, scales)
			}
			return err
		}, "the scales given are not those ClipScales returned last"},
		{"a privatization's own scales", "dp_sgd", func(o *runtime.Optimizer) error {
			st, err := o.PrivatizeTo(make([]float32, o.Len()), exampleRows(1, batch, o.Len()), nil, nil)
			if err == nil {
				_, err = o.PrivatizeScaled(exampleRows(3, batch, o.Len()), nil, st.Scales)
			}
			return err
		}, "the scales given are not those ClipScales returned last"},
		{"scales of other clipping", "dp_sgd", func(o *runtime.Optimizer) error {
			own, _ := o.DP()
			other := own
			other.ClipNorm *= 2
			scales, err := o.ClipScales(nil, []float64{4, 1, 2}, nil)
			if err := errors.Join(err, o.SetDP(other), o.SetDP(own)); err != nil {
				return err
			}
			_, err = o.PrivatizeScaled(exampleRows(1, batch, o.Len()), nil, scales)
			return err
		}, "the scales given are not those ClipScales returned last"},
		{"a scale short", "dp_sgd", func(o *runtime.Optimizer) error {
			_, err := o.PrivatizeScaled(exampleRows(1, batch+1, o.Len()), nil, []float32{1, 1, 1})
			return err
		}, "3 scales for 4 examples"},
		{"B past 2^24", "dp_sgd", func(o *runtime.Optimizer) error {
			if err := o.SetDP(runtime.DP{ClipNorm: 1, BatchSize: 1<<24 + 1}); err != nil {
				return err
			}
			return privatize(o, exampleRows(1, batch, o.Len()), nil)
		}, "exact up to 2^24"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := stepAfter(t, c.opt, nil)
			got := stepAfter(t, c.opt, func(o *runtime.Optimizer) {
				if err := c.call(o); err == nil || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("got %v, want an error containing %q", err, c.msg)
				}
			})
			if !slices.Equal(got, want) {
				t.Error("the refused call changed the step")
			}
		})
	}
}

func privatize(o *runtime.Optimizer, cur, look []float32) error {
	_, err := o.Privatize(cur, look)
	return err
}

// stepAfter opens opt with batch 3, sets a gradient with SetGrad, calls
// between and steps, returning the parameters.
func stepAfter(t *testing.T, opt string, between func(o *runtime.Optimizer)) []float32 {
	t.Helper()
	o, ts := openPrivatizing(t, opt, runtime.CPU, 3)
	_, grads := inputs(1)
	for _, tn := range ts {
		if err := tn.SetGrad(grads[0][tn.Offset : tn.Offset+tn.Len]); err != nil {
			t.Fatal(err)
		}
	}
	if between != nil {
		between(o)
	}
	if err := errors.Join(o.TrustClippedGradient(), o.Step()); err != nil {
		t.Fatal(err)
	}
	return flatParams(t, ts)
}

// TestClipScales checks ghost clipping's scales on norms with known
// answers: a 3-4-5 gradient (norm 5) clipped to 1 scales by 0.2; mixing
// ‖look‖ = 3 and ‖cur‖ = 4 at right angles with DiSK's a gives
// sqrt(9a² + 16(1−a)²).
func TestClipScales(t *testing.T) {
	o, _ := openPrivatizing(t, "disk", runtime.Go, 3)
	a := o.Observation().A
	got, err := o.ClipScales([]float64{3, 0, 0.1}, []float64{4, 0, 0.1}, []float64{0, 0, 0.01})
	if err != nil {
		t.Fatal(err)
	}
	mixed := math.Sqrt(9*a*a + 16*(1-a)*(1-a))
	want := []float32{float32(math.Min(1, 1/mixed)), 1, 1}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-7*float64(want[i]) {
			t.Errorf("scale %d = %v, want %v", i, got[i], want[i])
		}
	}
	s, _ := openPrivatizing(t, "dp_sgd", runtime.Go, 2)
	if got, err := s.ClipScales(nil, []float64{5, 0.5}, nil); err != nil || !slices.Equal(got, []float32{0.2, 1}) {
		t.Errorf("one set: %v, %v; want [0.2 1]", got, err)
	}
	if _, err := s.ClipScales(nil, []float64{math.Inf(1), 1}, nil); !errors.As(err, new(*runtime.NonFiniteExampleError)) {
		t.Errorf("an infinite norm: %v, want a NonFiniteExampleError", err)
	}
}

// A trainer of a two-point optimizer computes every example's gradient at
// θ_t and at the look-ahead point, and Privatize mixes, clips and averages
// them into the gradient the next Step adds the noise to.
func ExampleOptimizer_Privatize() {
	opt, err := runtime.Open("../generated/disk", runtime.Options{GoFallback: true}) // disk.so, or the reference
	if err != nil {
		log.Fatal(err)
	}
	defer opt.Close()
	if _, err := opt.Register("w", []float32{0.5, -0.25, 1}); err != nil {
		log.Fatal(err)
	}
	const batch = 2
	if err := opt.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 1.1, BatchSize: batch}); err != nil {
		log.Fatal(err)
	}
	// One row of opt.Len() values per example: ∇f(θ_t; ξ) and ∇f(look; ξ).
	cur := []float32{3, 4, 0 /* ξ = 0 */, 0.1, 0, 0 /* ξ = 1 */}
	look := []float32{3, 4, 0, 0.1, 0, 0}
	st, err := opt.Privatize(cur, look)
	if err != nil {
		log.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d clipped, scales %.4f\n", st.Clipped, st.Scales)
	// Output: 1 clipped, scales [0.2000 1.0000]
}

// TestPrivatizeCUDAMatchesCPU checks that the privatize kernels on the GPU
// and the steps after them give the bits of the host kernel, one and two
// sets; it skips without a CUDA device.
func TestPrivatizeCUDAMatchesCPU(t *testing.T) {
	needCUDA(t)
	const batch = 5
	for _, name := range []string{"disk", "dp_sgd"} {
		var results [][]float32
		for _, backend := range []runtime.Backend{runtime.CPU, runtime.CUDA} {
			o, ts := openPrivatizing(t, name, backend, batch)
			for step := range 3 {
				cur := exampleRows(uint64(30+step), batch, o.Len())
				var look []float32
				if o.Observation().Kind == "two_point" {
					look = exampleRows(uint64(40+step), batch, o.Len())
				}
				if _, err := o.Privatize(cur, look); err != nil {
					t.Fatal(err)
				}
				if err := o.Step(); err != nil {
					t.Fatal(err)
				}
			}
			results = append(results, flatParams(t, ts))
		}
		if !slices.Equal(results[0], results[1]) {
			t.Errorf("%s: CUDA differs from the host kernel", name)
		}
	}
}

// TestGhostScalesOneStep: the scales ClipScales returns clip one
// privatization of the step they were computed at; after a step they are
// refused, so that scales of one batch (all 1 where nothing was clipped)
// cannot clip a later one.
func TestGhostScalesOneStep(t *testing.T) {
	const batch = 3
	o, _ := openPrivatizing(t, "dp_sgd", runtime.CPU, batch)
	scales, err := o.ClipScales(nil, []float64{0.1, 0.1, 0.1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Privatize(exampleRows(1, batch, o.Len()), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
	if _, err := o.PrivatizeScaled(exampleRows(2, batch, o.Len()), nil, scales); err == nil || !strings.Contains(err.Error(), "at this step") {
		t.Fatalf("scales of the step before: %v, want them refused", err)
	}
}
