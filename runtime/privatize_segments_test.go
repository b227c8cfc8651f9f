package runtime_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// segmentLayouts are tensors' sizes whose edges fall inside a 128-row and
// inside a lane's four, on chunk edges and around them, with tensors of one
// element and of none.
var segmentLayouts = [][]int{
	{1}, {0, 5, 0}, {130, 1, 0, 2000, 5000}, {4096, 4096}, {4095, 1, 4097}, {1, 4094, 2, 127, 129, 3 * 4096},
}

// segmentsOf cuts the matrix rows (k rows of sum(sizes) values) and, where
// not nil, look into one contiguous [k][size] copy per tensor, as torch
// holds per-example gradients.
func segmentsOf(rows, look []float32, k int, sizes []int) []runtime.Segment {
	n := 0
	for _, s := range sizes {
		n += s
	}
	cut := func(m []float32, off, size int) []float32 {
		if m == nil {
			return nil
		}
		out := make([]float32, 0, k*size)
		for x := range k {
			out = append(out, m[x*n+off:x*n+off+size]...)
		}
		return out
	}
	segs, off := make([]runtime.Segment, len(sizes)), 0
	for i, size := range sizes {
		segs[i] = runtime.Segment{Offset: off, Size: size, Cur: cut(rows, off, size), Look: cut(look, off, size)}
		off += size
	}
	return segs
}

// TestPrivatizeSegmentsMatchesRows holds PrivatizeSegmentsTo to
// PrivatizeTo on the matrix the segments tile, bit for bit, the sum and
// the scales: the host kernels in every variant this CPU runs and the Go
// reference, one set (dp_sgd) and the two-point mix (disk), k = 0, 1 and
// many, the scales computed and given.
func TestPrivatizeSegmentsMatchesRows(t *testing.T) {
	isas, err := hostkernel.ISAs()
	if err != nil {
		t.Fatal(err)
	}
	for _, isa := range append(isas, "go") {
		for _, opt := range []string{"dp_sgd", "disk"} {
			for _, sizes := range segmentLayouts {
				t.Run(fmt.Sprintf("%s/%s/%v", isa, opt, sizes), func(t *testing.T) { checkSegments(t, isa, opt, sizes) })
			}
		}
	}
}

func checkSegments(t *testing.T, isa, opt string, sizes []int) {
	backend := runtime.CPU
	if isa == "go" {
		backend = runtime.Go
	} else {
		t.Setenv(hostisa.EnvVar, isa)
	}
	o := openLayout(t, opt, backend, sizes)
	for _, k := range []int{0, 1, 5, 33} {
		cur, look := exampleRows(1, k, o.Len()), exampleRows(2, k, o.Len())
		if opt == "dp_sgd" {
			look = nil
		}
		want, got := make([]float32, o.Len()), make([]float32, o.Len())
		wst, err := o.PrivatizeTo(want, cur, look, nil)
		if err != nil {
			t.Fatal(err)
		}
		gst, err := o.PrivatizeSegmentsTo(got, segmentsOf(cur, look, k, sizes), k, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := floatbits.Diff(want, got) + floatbits.Diff(wst.Scales, gst.Scales); d != "" || wst.Clipped != gst.Clipped {
			t.Fatalf("k %d: the segments differ from the rows: %s (clipped %d, %d)", k, d, wst.Clipped, gst.Clipped)
		}
		if k > 0 {
			checkScaledSegments(t, o, cur, look, k, sizes, wst.Scales)
		}
	}
}

// checkScaledSegments checks that the scales given make the same sum as
// through the rows.
func checkScaledSegments(t *testing.T, o *runtime.Optimizer, cur, look []float32, k int, sizes []int, scales []float32) {
	t.Helper()
	want, got := make([]float32, o.Len()), make([]float32, o.Len())
	o.IssueScales(scales)
	if _, err := o.PrivatizeTo(want, cur, look, scales); err != nil {
		t.Fatal(err)
	}
	if _, err := o.PrivatizeSegmentsTo(got, segmentsOf(cur, look, k, sizes), k, scales); err == nil || !strings.Contains(err.Error(), "scales given are not") {
		t.Fatalf("the scales given a second time: %v, want them refused", err)
	}
	o.IssueScales(scales)
	if _, err := o.PrivatizeSegmentsTo(got, segmentsOf(cur, look, k, sizes), k, scales); err != nil {
		t.Fatal(err)
	}
	if d := floatbits.Diff(want, got); d != "" {
		t.Fatalf("k %d, the scales given: the segments differ from the rows: %s", k, d)
	}
}

// openLayout opens opt on backend with one tensor per size (every size 0
// is left out: a tensor has coordinates) and the DP settings {C 1, σ 0,
// B 8}.
func openLayout(t *testing.T, opt string, backend runtime.Backend, sizes []int) *runtime.Optimizer {
	t.Helper()
	o := openBare(t, opt, backend, sizes)
	if err := o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 0, BatchSize: 8}); err != nil {
		t.Fatal(err)
	}
	return o
}

// openBare is openLayout without DP settings: they are a load's.
func openBare(t *testing.T, opt string, backend runtime.Backend, sizes []int) *runtime.Optimizer {
	t.Helper()
	var kept []int
	n := 0
	for _, s := range sizes {
		if s > 0 {
			kept = append(kept, s)
			n += s
		}
	}
	o, err := runtime.Open(kernelDir(t, opt), runtime.Options{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	if err := o.SetSeed(2026); err != nil {
		t.Fatal(err)
	}
	registerSized(t, o, kept, make([]float32, n))
	return o
}

// TestPrivatizeSegmentsGradient checks that segments privatize into the
// gradient buffer (out nil) as Privatize does: the steps after them agree.
func TestPrivatizeSegmentsGradient(t *testing.T) {
	sizes := []int{3, 4096, 1, 200}
	want := stepAfterSegments(t, sizes, func(o *runtime.Optimizer, cur, look []float32, k int) error {
		_, err := o.Privatize(cur, look)
		return err
	})
	got := stepAfterSegments(t, sizes, func(o *runtime.Optimizer, cur, look []float32, k int) error {
		_, err := o.PrivatizeSegmentsTo(nil, segmentsOf(cur, look, k, sizes), k, nil)
		return err
	})
	if d := floatbits.Diff(want, got); d != "" {
		t.Fatalf("the step after the segments differs: %s", d)
	}
}

// stepAfterSegments opens disk over sizes, privatizes 6 examples with
// priv and steps, returning the parameters.
func stepAfterSegments(t *testing.T, sizes []int, priv func(o *runtime.Optimizer, cur, look []float32, k int) error) []float32 {
	t.Helper()
	o, ts := openSized(t, kernelDir(t, "disk"), runtime.Options{Backend: runtime.CPU}, sizes, make([]float32, 4300))
	if err := o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 0, BatchSize: 8}); err != nil {
		t.Fatal(err)
	}
	const k = 6
	if err := priv(o, exampleRows(3, k, o.Len()), exampleRows(4, k, o.Len()), k); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
	return flatParams(t, ts)
}

// TestPrivatizeSegmentsErrors checks that segments that do not tile the
// gradient, or hold too few or too many rows, are refused with a message
// saying so, and an example that is not finite as with rows.
func TestPrivatizeSegmentsErrors(t *testing.T) {
	const k = 2
	sizes := []int{5, 130}
	good := func(o *runtime.Optimizer) []runtime.Segment {
		return segmentsOf(exampleRows(1, k, o.Len()), exampleRows(2, k, o.Len()), k, sizes)
	}
	for _, c := range []struct {
		name string
		edit func(segs []runtime.Segment) []runtime.Segment
		msg  string
	}{
		{"overlapping", func(s []runtime.Segment) []runtime.Segment { s[1].Offset = 4; return s }, "starts at coordinate 4, want 5"},
		{"a gap", func(s []runtime.Segment) []runtime.Segment { s[1].Offset = 6; return s }, "starts at coordinate 6, want 5"},
		{"out of order", func(s []runtime.Segment) []runtime.Segment { s[0], s[1] = s[1], s[0]; return s }, "segment 0 starts at coordinate 5"},
		{"short of the gradient", func(s []runtime.Segment) []runtime.Segment { return s[:1] }, "cover 5 coordinates of the gradient's 135"},
		{"past the gradient", func(s []runtime.Segment) []runtime.Segment { s[1].Size = 131; return s }, "passes the gradient's 135"},
		{"short rows", func(s []runtime.Segment) []runtime.Segment { s[1].Cur = s[1].Cur[1:]; return s }, "segment 1 holds 259 values, want 2 examples of 130"},
		{"short look", func(s []runtime.Segment) []runtime.Segment { s[0].Look = s[0].Look[:9]; return s }, "segment 0 holds 9 look-ahead values"},
		{"look in one segment only", func(s []runtime.Segment) []runtime.Segment { s[1].Look = nil; return s }, "segment 1 holds 0 look-ahead values"},
		{"no look", func(s []runtime.Segment) []runtime.Segment { s[0].Look, s[1].Look = nil, nil; return s }, "look-ahead point too"},
		{"NaN", func(s []runtime.Segment) []runtime.Segment { s[1].Look[140] = float32(math.NaN()); return s }, "example 1 has a NaN"},
	} {
		t.Run(c.name, func(t *testing.T) { checkSegmentsRefused(t, sizes, good, c.edit, c.msg) })
	}
	t.Run("rows in the destination", func(t *testing.T) {
		o := openLayout(t, "disk", runtime.CPU, sizes)
		mem := make([]float32, 2*k*o.Len())
		out, segs := mem[:o.Len()], good(o)
		segs[1].Cur = mem[100 : 100+k*130]
		if _, err := o.PrivatizeSegmentsTo(out, segs, k, nil); err == nil || !strings.Contains(err.Error(), "segment 1 overlap the gradient") {
			t.Fatalf("got %v, want the overlap refused", err)
		}
	})
}

// checkSegmentsRefused checks that the segments good makes, edited, are
// refused with an error containing msg and write nothing.
func checkSegmentsRefused(t *testing.T, sizes []int, good func(*runtime.Optimizer) []runtime.Segment,
	edit func([]runtime.Segment) []runtime.Segment, msg string) {
	o := openLayout(t, "disk", runtime.CPU, sizes)
	out := make([]float32, o.Len())
	_, err := o.PrivatizeSegmentsTo(out, edit(good(o)), 2, nil)
	if err == nil || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want an error containing %q", err, msg)
	}
	if slices.ContainsFunc(out, func(x float32) bool { return x != 0 }) {
		t.Error("the refused call wrote out")
	}
}

// TestReleaseOnceSegments: the release rule holds for segments as for
// rows — a step releases what PrivatizeSegmentsTo wrote into the
// trainer's gradient once; a write after it is refused; segments
// privatized into memory the step does not read release nothing.
func TestReleaseOnceSegments(t *testing.T) {
	const n, k = 64, 5
	sizes := []int{20, 1, 43}
	o, bufs := openBuffers(t, n, 0, testDP)
	if _, err := o.PrivatizeSegmentsTo(bufs[1], segmentsOf(exampleRows(1, k, n), nil, k, sizes), k, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatalf("a step on a gradient privatized from segments: %v", err)
	}
	wantRefused(t, o, 1, o.Step(), stale)
	if _, err := o.PrivatizeSegmentsTo(nil, segmentsOf(exampleRows(2, k, n), nil, k, sizes), k, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.GradientWritten(); err != nil { // a backward pass into the privatized gradient
		t.Fatal(err)
	}
	wantRefused(t, o, 1, o.Step(), written)
	other := make([]float32, n)
	if _, err := o.PrivatizeSegmentsTo(other, segmentsOf(exampleRows(3, k, n), nil, k, sizes), k, nil); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, o, 1, o.Step(), written)
}
