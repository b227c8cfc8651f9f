package rng

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

// Accuracy of the float32 log, sin, cos and Box-Muller radius against float64 math (whose
// error, ~1e-16 relative, is negligible at float32 precision). Errors are in ULPs of the exact
// result's float32 binade. Each test asserts a bound a little above what was measured, so that
// a change to a constant or to the evaluation order that loses accuracy is caught; the
// measured values are logged with -v and recorded in docs/noise.md.

// ulp32 is the spacing of float32 values in the binade of y (of the float32 subnormals below).
func ulp32(y float64) float64 {
	// |y| in [2^k, 2^(k+1)) has float64 biased exponent k+1023; its float32 ULP is 2^(k-23),
	// and never below 2^-149 (biased 874).
	e := math.Float64bits(y) >> 52 & 0x7ff
	return math.Float64frombits((max(e, 874+23) - 23) << 52)
}

// errMax is the worst error seen over a sweep and where.
type errMax struct {
	ulp, ulpAt float64 // ULPs of the float32 result
	abs, absAt float64 // absolute
	rel, relAt float64 // relative
}

func (m *errMax) add(x float64, got float32, want float64) {
	d := math.Abs(float64(got) - want)
	if u := d / ulp32(want); u > m.ulp {
		m.ulp, m.ulpAt = u, x
	}
	if d > m.abs {
		m.abs, m.absAt = d, x
	}
	if want != 0 {
		if r := d / math.Abs(want); r > m.rel {
			m.rel, m.relAt = r, x
		}
	}
}

func (m *errMax) merge(o errMax) {
	if o.ulp > m.ulp {
		m.ulp, m.ulpAt = o.ulp, o.ulpAt
	}
	if o.abs > m.abs {
		m.abs, m.absAt = o.abs, o.absAt
	}
	if o.rel > m.rel {
		m.rel, m.relAt = o.rel, o.relAt
	}
}

// sweepBits runs visit on the float32 bit patterns lo, lo+stride, ... <= hi, spread over all
// CPUs, and merges the per-worker maxima. visit reports into the errMax values it is given.
func sweepBits(lo, hi, stride uint32, nOut int, visit func(bits uint32, out []errMax)) []errMax {
	workers := runtime.GOMAXPROCS(0)
	count := uint64(hi-lo)/uint64(stride) + 1
	results := make([][]errMax, workers)
	var wg sync.WaitGroup
	for w := range workers {
		results[w] = make([]errMax, nOut)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(w); i < count; i += uint64(workers) {
				visit(lo+uint32(i)*stride, results[w])
			}
		}()
	}
	wg.Wait()
	out := make([]errMax, nOut)
	for _, r := range results {
		for j := range out {
			out[j].merge(r[j])
		}
	}
	return out
}

func f32bits(x float32) uint32 { return math.Float32bits(x) }

// TestAccuracyLog32 measures log32 on every float32 in [0.5, 1] and every 7th float32 in
// [2^-33, 0.5) (about 4.6e7 inputs; 2^-33 is the smallest u the generator produces).
func TestAccuracyLog32(t *testing.T) {
	visit := func(b uint32, out []errMax) {
		u := math.Float32frombits(b)
		out[0].add(float64(u), log32(u), math.Log(float64(u)))
	}
	top := sweepBits(f32bits(0.5), f32bits(1), 1, 1, visit)[0]
	rest := sweepBits(f32bits(0x1p-33), f32bits(0.5)-1, 7, 1, visit)[0]
	t.Logf("log32 on [0.5, 1] (all):      max %.3f ulp at u=%.9g, max abs %.3g at u=%.9g",
		top.ulp, top.ulpAt, top.abs, top.absAt)
	t.Logf("log32 on [2^-33, 0.5) (1/7): max %.3f ulp at u=%.9g, max abs %.3g at u=%.9g",
		rest.ulp, rest.ulpAt, rest.abs, rest.absAt)
	all := top
	all.merge(rest)
	if all.ulp > 1.25 {
		t.Errorf("log32: max error %.3f ulp, want <= 1.25", all.ulp)
	}
	if all.abs > 1.5e-6 {
		t.Errorf("log32: max absolute error %.3g, want <= 1.5e-6", all.abs)
	}
	if log32(1) != 0 {
		t.Errorf("log32(1) = %g, want 0", log32(1))
	}
}

// TestAccuracySinCos measures sin32 and cos32 on every float32 in [0.5, float32(π/4)] (the
// largest |x| that angle produces) and every 9th float32 in [2^-31, 0.5) (angle's smallest
// |x| is 0.5·π/2^31 ≈ 2^-30.4), and checks that negative arguments give exactly the mirrored
// results: sin32(-x) = -sin32(x), cos32(-x) = cos32(x), bit for bit.
func TestAccuracySinCos(t *testing.T) {
	visit := func(b uint32, out []errMax) {
		x := math.Float32frombits(b)
		s, c := sin32(x), cos32(x)
		out[0].add(float64(x), s, math.Sin(float64(x)))
		out[1].add(float64(x), c, math.Cos(float64(x)))
		if f32bits(sin32(-x)) != f32bits(-s) || f32bits(cos32(-x)) != f32bits(c) {
			out[2].abs = 1 // odd/even symmetry broken
			out[2].absAt = float64(x)
		}
	}
	quarter := float32(math.Pi / 4)
	top := sweepBits(f32bits(0.5), f32bits(quarter), 1, 3, visit)
	rest := sweepBits(f32bits(0x1p-31), f32bits(0.5)-1, 9, 3, visit)
	for i := range top {
		top[i].merge(rest[i])
	}
	sn, cs, sym := top[0], top[1], top[2]
	t.Logf("sin32 on ±[2^-31, π/4]: max %.3f ulp at x=%.9g, max abs %.3g", sn.ulp, sn.ulpAt, sn.abs)
	t.Logf("cos32 on ±[2^-31, π/4]: max %.3f ulp at x=%.9g, max abs %.3g", cs.ulp, cs.ulpAt, cs.abs)
	if sym.abs != 0 {
		t.Errorf("sin32/cos32 not exactly odd/even at x = %g", sym.absAt)
	}
	if sn.ulp > 1.25 || cs.ulp > 1.25 {
		t.Errorf("sin32 %.3f ulp, cos32 %.3f ulp, want <= 1.25", sn.ulp, cs.ulp)
	}
	if sin32(0) != 0 || cos32(0) != 1 {
		t.Errorf("sin32(0) = %g, cos32(0) = %g", sin32(0), cos32(0))
	}
}

// TestAccuracyRadius measures the end-to-end radius sqrt32(-2·log32(u)) against
// sqrt(-2·ln u) on the u the generator produces: u = (float32(xr) + 0.5)·2^-32 for every
// xr < 2^24 (enumerated), and for xr >= 2^24, where the +0.5 is rounded away and u ranges over
// every float32 in [2^-8, 1], all of [0.5, 1] (small radii, the most sensitive to log32's
// relative error) and every 5th float32 of [2^-8, 0.5): 3.7e7 of the 8.4e7 reachable u.
// u = 1 (radius 0, exact) is skipped.
func TestAccuracyRadius(t *testing.T) {
	visitU := func(u float32, out []errMax) {
		if u == 1 {
			return
		}
		l := log32(u)
		r := float32(math.Sqrt(float64(float32(-2 * l))))
		ln := math.Log(float64(u))
		out[0].add(float64(u), r, math.Sqrt(-2*ln))
		out[1].add(float64(u), l, ln)
	}
	low := sweepBits(0, 1<<24-1, 1, 2, func(xr uint32, out []errMax) {
		u := (float32(xr) + 0.5) * twoPowM32
		if r := boxMullerRadius(xr); f32bits(r) != f32bits(float32(math.Sqrt(float64(float32(-2*log32(u)))))) {
			out[0].ulp = math.Inf(1) // boxMullerRadius disagrees with its definition
		}
		visitU(u, out)
	})
	visitBits := func(b uint32, out []errMax) { visitU(math.Float32frombits(b), out) }
	for _, high := range [][]errMax{
		sweepBits(f32bits(0.5), f32bits(1), 1, 2, visitBits),
		sweepBits(f32bits(0x1p-8), f32bits(0.5)-1, 5, 2, visitBits),
	} {
		low[0].merge(high[0])
		low[1].merge(high[1])
	}
	r, l := low[0], low[1]
	t.Logf("radius over reachable u:  max %.3f ulp at u=%.9g, max rel %.3g at u=%.9g, max abs %.3g",
		r.ulp, r.ulpAt, r.rel, r.relAt, r.abs)
	t.Logf("log32 over reachable u:   max %.3f ulp at u=%.9g", l.ulp, l.ulpAt)
	if r.ulp > 1.5 || r.rel > 1.5e-7 {
		t.Errorf("radius: max error %.3f ulp, relative %.3g; want <= 1.5 ulp, 1.5e-7", r.ulp, r.rel)
	}
}
