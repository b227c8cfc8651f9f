package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/generated/disk"
	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// privRef is a generated package's Go reference of the privatize kernels.
type privRef struct {
	norms  func(partials, cur, look []float32, n int, a, b float32, lo, hi int)
	scales func(scales, partials []float32, nchunks int, clip float64, lo, hi int)
	sum    func(out, cur, look, scales []float32, n int, a, b, divisor float32, lo, hi int)
}

// privSweep are the optimizers whose privatize kernels the host test runs
// on every case of privCases: two with a two-point observation and one
// without. The others run the sharp cases (privSharpCases), which reach
// every path of the kernels.
var privSweep = []string{"disk", "fiber", "dp_sgd"}

// twoPoint reports whether the optimizer name has a two-point observation:
// only those privatize a mix of two sets (privCase.a not NaN).
func twoPoint(name string) bool {
	return slices.Contains(optimizerNamed(name).states, lang.LookaheadState)
}

// casesFor are the cases of privSharpCases, and with sweep those of
// privCases too, that apply to the optimizer name.
func casesFor(name string, sweep bool) []privCase {
	cases := privSharpCases()
	if sweep {
		cases = append(cases, privCases()...)
	}
	return applicable(name, cases)
}

// applicable are the cases that apply to the optimizer name: those with a
// mix only for a two-point observation.
func applicable(name string, cases []privCase) []privCase {
	if !twoPoint(name) {
		cases = slices.DeleteFunc(slices.Clone(cases), func(c privCase) bool { return !math.IsNaN(c.a) })
	}
	return cases
}

// privCase is one privatize run: batch examples of n coordinates whose
// clipped sum is divided by float32(expected), the mix weight a (NaN: one
// set, no look), buffers skew floats into their allocations; bad, if not
// 0, is an entry of example 1 (its coordinate privBadAt), which makes its
// norm non-finite.
type privCase struct {
	batch, expected, n, skew int
	a                        float64
	bad                      float32
}

func (c privCase) String() string {
	s := fmt.Sprintf("k=%d/B=%d/n=%d/skew=%d/a=%v", c.batch, c.expected, c.n, c.skew, c.a)
	if c.bad != 0 {
		s += fmt.Sprintf("/bad=%v", c.bad)
	}
	return s
}

// privBadAt is the coordinate of a case's bad entry: in the second chunk
// where there is one.
func (c privCase) privBadAt() int { return min(c.n-1, reduce.ReduceChunk+1) }

// privSharpCases reach every path of the privatize kernels with few
// coordinates: one chunk with a tail, exactly eight chunks (the scales
// kernel's loop over chunks unrolled by eight, without its remainder) and
// nineteen (the unrolled loop twice, and the remainder); one example (the sum's loop over examples without its
// unrolled pair), two, an odd count; none; k ≠ B; every mode (one set, the
// look as the one set at a = 1, the two-point mix); misaligned buffers; and
// an example whose norm is NaN or +Inf or overflows, which gets a NaN
// scale.
func privSharpCases() []privCase {
	nan := math.NaN()
	return []privCase{
		{batch: 3, expected: 3, n: 5, skew: 1, a: nan},
		{batch: 1, expected: 1, n: 129, skew: 2, a: 0.3},
		{batch: 2, expected: 2, n: 8 * reduce.ReduceChunk, skew: 3, a: nan},
		{batch: 2, expected: 2, n: 18*reduce.ReduceChunk + 129, skew: 1, a: nan},
		{batch: 7, expected: 5, n: 4097, skew: 2, a: 1},
		{batch: 2, expected: 2, n: 4097, a: 0},
		{batch: 0, expected: 4, n: 4097, skew: 1, a: nan},
		{batch: 3, expected: 3, n: 5000, a: nan, bad: float32(math.Inf(1))},
		{batch: 3, expected: 3, n: 5000, skew: 1, a: 0.3, bad: float32(math.NaN())},
		{batch: 2, expected: 2, n: 130, skew: 3, a: nan, bad: float32(math.Inf(-1))},
		{batch: 2, expected: 2, n: 130, a: 0.3, bad: 1e30},
	}
}

// divisor is the sum's divisor of case c, as the runtime passes it.
func (c privCase) divisor() float32 { return float32(c.expected) }

// privCases are the sizes around the chunk (4096) and row (128) bounds, the
// batch sizes and the mixes of the bit-exactness tests: k = B examples, and
// k ≠ B as Poisson sampling gives them — none, fewer and more than B, and
// B = 2^24, the largest the runtime allows.
func privCases() []privCase {
	var cases []privCase
	sizes := []int{0, 1, 5, 4095, 4096, 4097, 3*4096 + 129, 65537}
	for i, b := range []int{1, 2, 3, 7, 33} {
		for j, n := range sizes {
			if b*n > 40*65537 {
				continue
			}
			for k, a := range []float64{math.NaN(), 0, 0.3, 0.9523809523809523, 1} {
				cases = append(cases, privCase{batch: b, expected: b, n: n, skew: (i + j + k) % 4, a: a})
			}
		}
	}
	for i, kb := range [][2]int{{0, 4}, {3, 8}, {7, 5}, {2, 1 << 24}} {
		for j, n := range sizes {
			for k, a := range []float64{math.NaN(), 0.3} {
				cases = append(cases, privCase{batch: kb[0], expected: kb[1], n: n, skew: (i + j + k) % 4, a: a})
			}
		}
	}
	return cases
}

// privInputs returns the rows cur and look of case c (look nil for one
// set), skew floats into their allocations: example ξ's rows are scaled so
// that some have norms above the clipping norm privClip and some below;
// every fifth example is zero.
func privInputs(c privCase) (cur, look []float32) {
	r := rand.New(rand.NewPCG(uint64(c.batch), uint64(c.n)))
	rows := func() []float32 {
		x := make([]float32, c.batch*c.n+c.skew)[c.skew:]
		for ex := range c.batch {
			scale := math.Pow(10, float64((ex+1)%7-4)) / math.Sqrt(float64(max(c.n, 1)))
			if ex%5 == 4 {
				scale = 0
			}
			fillGradient(r, x[ex*c.n:(ex+1)*c.n], ex)
			for i := ex * c.n; i < (ex+1)*c.n; i++ {
				x[i] = float32(float64(x[i]) * scale * 100)
			}
		}
		return x
	}
	cur = rows()
	if !math.IsNaN(c.a) {
		look = rows()
	}
	if c.bad != 0 {
		for _, x := range [][]float32{cur, look} {
			if x != nil {
				x[c.n+c.privBadAt()] = c.bad
			}
		}
	}
	return cur, look
}

// privClip is the clipping norm of the privatize tests.
const privClip = 1.0

// privMode returns the kernels' mode, weights and look for case c: one set
// (cur, or look as the one set at a = 1) or the two-point mix.
func privMode(c privCase, cur, look []float32) (mode uint32, a32, b32 float32, one, two []float32) {
	switch {
	case math.IsNaN(c.a) || c.a == 0:
		return 0, 0, 0, cur, nil
	case c.a == 1:
		return 0, 0, 0, look, nil
	}
	a32, b32 = disk.PrivatizeWeights(c.a)
	return 1, a32, b32, cur, look
}

// cuts splits [0, end) into pieces at awkward places.
func cuts(end int) [][2]int {
	points := []int{0, end / 3, end/3 + 1, 2*end/3 + 3, end}
	var out [][2]int
	for i := 1; i < len(points); i++ {
		lo, hi := min(points[i-1], end), min(points[i], end)
		if hi > lo {
			out = append(out, [2]int{lo, hi})
		}
	}
	return out
}

// privatizeKernels builds (hostSharedObject) and loads the privatize host
// functions of the optimizer name, the variant isa ("" for the best).
func privatizeKernels(t *testing.T, name, isa string) *hostkernel.Privatize {
	t.Helper()
	syms := generatedManifest(t, name).Kernels.Privatize.HostFunctions // norms, scales, sum
	p, err := hostkernel.OpenPrivatizeISA(hostSharedObject(t, optimizerNamed(name)), syms, isa)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPrivatizeHostMatchesGo checks the privatize host functions against
// the generated Go reference bit for bit: the partials, the scales and the
// clipped sum over the divisor, the host functions run over pieces of
// their ranges the way the runtime splits them over threads; every variant
// this CPU runs, the best on every case, the others up to n = 4097 and on
// the sharp case of nineteen chunks; privSweep's optimizers on every case of
// privCases, the others on privSharpCases.
func TestPrivatizeHostMatchesGo(t *testing.T) {
	for _, opt := range optimizers {
		name, ref := opt.name, opt.pkg.priv
		t.Run(name, func(t *testing.T) {
			for i, isa := range hostISAs(t) {
				k := privatizeKernels(t, name, isa)
				for _, c := range casesFor(name, slices.Contains(privSweep, name)) {
					if (i > 0 || testing.Short()) && c.n > 4097 && c.n != 18*reduce.ReduceChunk+129 {
						continue
					}
					t.Run(isa+"/"+c.String(), func(t *testing.T) { checkPrivatize(t, ref, k, c) })
				}
			}
		})
	}
}

func checkPrivatize(t *testing.T, ref privRef, k *hostkernel.Privatize, c privCase) {
	cur, look := privInputs(c)
	mode, a32, b32, one, two := privMode(c, cur, look)
	nchunks := reduce.ReduceChunks(c.n)
	tasks := c.batch * nchunks
	want := privOutputs(c)
	ref.norms(want.partials, one, two, c.n, a32, b32, 0, tasks)
	ref.scales(want.scales, want.partials, nchunks, privClip, 0, c.batch)
	ref.sum(want.out, one, two, want.scales, c.n, a32, b32, c.divisor(), 0, c.n)
	got := privOutputs(c)
	args := hostkernel.PrivatizeArgs{Cur: one, Look: two, Partials: got.partials, Scales: got.scales, Out: got.out,
		Batch: int64(c.batch), N: int64(c.n), Clip: privClip, A: a32, B: b32, Divisor: c.divisor(), Mode: mode}
	for _, phase := range []struct {
		run func(hostkernel.PrivatizeArgs) error
		end int
	}{{k.Norms, tasks}, {k.Scales, c.batch}, {k.Sum, c.n}} {
		for _, r := range cuts(phase.end) {
			args.Lo, args.Hi = int64(r[0]), int64(r[1])
			if err := phase.run(args); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := comparePrivatize(c, want, got); err != nil {
		t.Fatal(err)
	}
	checkClipped(t, c, want.scales)
	checkNoExamples(t, c, got.out)
}

// checkNoExamples checks that a case without examples sets every
// coordinate to +0.
func checkNoExamples(t *testing.T, c privCase, out []float32) {
	t.Helper()
	for i, x := range out {
		if c.batch == 0 && math.Float32bits(x) != 0 {
			t.Fatalf("no examples: coordinate %d = %v, want +0", i, x)
		}
	}
}

// comparePrivatize returns how the partials, the scales or the clipped sum
// of got first differ from want's (floatbits.Diff), or an error if want's
// hold more NaNs than the case's bad entry makes (floatbits.TooManyNaNs):
// one partial and one scale, and every coordinate of the sum.
func comparePrivatize(c privCase, want, got privBuffers) error {
	for _, b := range []struct {
		name      string
		want, got []float32
		planted   int
	}{{"partials", want.partials, got.partials, 1}, {"scales", want.scales, got.scales, 1}, {"out", want.out, got.out, len(want.out)}} {
		if d := floatbits.Diff(b.want, b.got); d != "" {
			return fmt.Errorf("%s differ: kernel%s", b.name, d)
		}
		if c.bad == 0 {
			b.planted = 0
		}
		if err := floatbits.TooManyNaNs(b.want, b.planted); err != nil {
			return fmt.Errorf("%s: %v", b.name, err)
		}
	}
	return nil
}

// privBuffers are the outputs of one privatize run.
type privBuffers struct{ partials, scales, out []float32 }

// privOutputs returns output buffers for case c, skewed as its inputs,
// filled with a value the kernels overwrite.
func privOutputs(c privCase) privBuffers {
	buf := func(n int) []float32 {
		x := make([]float32, n+c.skew)[c.skew:]
		for i := range x {
			x[i] = -7
		}
		return x
	}
	return privBuffers{buf(c.batch * reduce.ReduceChunks(c.n)), buf(c.batch), buf(c.n)}
}

// checkClipped checks that the cases exercise what they are meant to: zero
// examples get scale 1, an example with a bad entry a NaN scale, and some
// examples of a large enough case are clipped while others are not.
func checkClipped(t *testing.T, c privCase, scales []float32) {
	t.Helper()
	clipped := 0
	for ex, s := range scales {
		if c.bad != 0 && ex == 1 {
			if !math.IsNaN(float64(s)) {
				t.Fatalf("example 1 has the entry %v: scale %v, want NaN", c.bad, s)
			}
			continue
		}
		if ex%5 == 4 && s != 1 || !(s > 0 && s <= 1) {
			t.Fatalf("example %d: scale %v", ex, s)
		}
		if s < 1 {
			clipped++
		}
	}
	if c.batch >= 7 && c.n > 0 && (clipped == 0 || clipped == c.batch) {
		t.Fatalf("%d of %d examples clipped: the case tests too little", clipped, c.batch)
	}
}

// TestPrivatizeNonFinite checks that an example with a NaN or ±Inf entry,
// or whose squares overflow float32, gets a NaN scale on both sides, and the
// others their usual scales.
func TestPrivatizeNonFinite(t *testing.T) {
	k := privatizeKernels(t, "disk", "")
	const batch, n = 3, 5000
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1)), 1e30} {
		cur := make([]float32, batch*n)
		for i := range cur {
			cur[i] = 0.01
		}
		cur[n+4097] = bad
		nchunks := reduce.ReduceChunks(int(n))
		want := make([]float32, batch)
		partials := make([]float32, batch*nchunks)
		disk.PrivatizeNorms(partials, cur, nil, n, 0, 0, 0, len(partials))
		disk.PrivatizeScales(want, partials, nchunks, privClip, 0, batch)
		got := make([]float32, batch)
		args := hostkernel.PrivatizeArgs{Cur: cur, Partials: make([]float32, batch*nchunks), Scales: got,
			Batch: batch, N: n, Clip: privClip, Hi: int64(batch * nchunks)}
		if err := k.Norms(args); err != nil {
			t.Fatal(err)
		}
		args.Hi = batch
		if err := k.Scales(args); err != nil {
			t.Fatal(err)
		}
		if floatbits.FirstDiff(want, got) >= 0 || !math.IsNaN(float64(got[1])) || math.IsNaN(float64(got[0])) || got[0] != got[2] {
			t.Errorf("entry %v: scales Go %v, kernel %v; want NaN for example 1 alone", bad, want, got)
		}
	}
}

// TestPrivatizeArgErrors checks that the host functions refuse arguments
// that would read or write out of bounds.
func TestPrivatizeArgErrors(t *testing.T) {
	k := privatizeKernels(t, "disk", "")
	cur := make([]float32, 2*10)
	good := hostkernel.PrivatizeArgs{Cur: cur, Partials: make([]float32, 2), Scales: make([]float32, 2), Out: make([]float32, 10),
		Batch: 2, N: 10, Clip: 1, Divisor: 2, Hi: 2}
	for _, c := range []struct {
		name string
		edit func(a *hostkernel.PrivatizeArgs)
		run  func(hostkernel.PrivatizeArgs) error
	}{
		{"short cur", func(a *hostkernel.PrivatizeArgs) { a.Cur = cur[:19] }, k.Norms},
		{"mode 1 without look", func(a *hostkernel.PrivatizeArgs) { a.Mode = 1 }, k.Sum},
		{"tasks past the end", func(a *hostkernel.PrivatizeArgs) { a.Hi = 3 }, k.Norms},
		{"short partials", func(a *hostkernel.PrivatizeArgs) { a.Partials = a.Partials[:1] }, k.Scales},
		{"clip 0", func(a *hostkernel.PrivatizeArgs) { a.Clip = 0 }, k.Scales},
		{"range backwards", func(a *hostkernel.PrivatizeArgs) { a.Lo = 2; a.Hi = 1 }, k.Sum},
		{"mode 2", func(a *hostkernel.PrivatizeArgs) { a.Mode = 2 }, k.Norms},
		{"divisor 0", func(a *hostkernel.PrivatizeArgs) { a.Divisor = 0 }, k.Sum},
		{"divisor NaN", func(a *hostkernel.PrivatizeArgs) { a.Divisor = float32(math.NaN()) }, k.Sum},
		{"divisor +Inf", func(a *hostkernel.PrivatizeArgs) { a.Divisor = float32(math.Inf(1)) }, k.Sum},
		{"short scales", func(a *hostkernel.PrivatizeArgs) { a.Scales = a.Scales[:1] }, k.Sum},
	} {
		a := good
		c.edit(&a)
		if err := c.run(a); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := k.Norms(good); err != nil {
		t.Errorf("good arguments: %v", err)
	}
	if err := k.Sum(good); err != nil {
		t.Errorf("good arguments: %v", err)
	}
	none := good
	none.Batch, none.Cur, none.Scales = 0, nil, nil
	if err := k.Sum(none); err != nil {
		t.Errorf("no examples: %v", err)
	}
}
