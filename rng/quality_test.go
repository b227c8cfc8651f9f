package rng

import (
	"math"
	"slices"
	"testing"
)

// Statistical quality of the generator, on 1.4e7 draws in all:
//
//   - TestQualityDistribution: 4e6 draws (1e6 groups of four) against N(0,1): mean, variance,
//     skewness, excess kurtosis, tail fractions, Kolmogorov-Smirnov.
//   - TestQualityIndependence: Pearson correlations between draws that share a Philox output,
//     a counter word, or nothing: lanes of one group (1e6 groups, 4e6 draws), adjacent steps,
//     different sites and neighbouring seeds (1e6 pairs, 2e6 draws each).
//
// All bounds are 5 standard errors of the statistic under the null hypothesis that the draws
// are independent N(0,1) (a two-sided 5σ test has α ≈ 5.7e-7), except Kolmogorov-Smirnov,
// tested at α = 1e-3. The inputs are fixed, so the outcome is deterministic: these bounds were
// chosen before looking at the outputs, and a failure means a real defect (or a one-in-a-
// thousand-or-rarer draw, which a change of seed would not fix silently). The measured values
// are logged with -v and recorded in docs/noise.md.

const qualitySeed = 0x5eed_f1be_2026_0001

// moments accumulates the sums needed for mean, variance, skewness and kurtosis.
type moments struct {
	n                  int
	s1, s2, s3, s4     float64
	tail3, tail4, maxZ float64
}

func (m *moments) add(z float32) {
	x := float64(z)
	x2 := x * x
	m.n++
	m.s1 += x
	m.s2 += x2
	m.s3 += x2 * x
	m.s4 += x2 * x2
	if a := math.Abs(x); a > 3 {
		m.tail3++
		if a > 4 {
			m.tail4++
		}
		m.maxZ = max(m.maxZ, a)
	}
}

// pearson accumulates the Pearson correlation of pairs (a, b) and of their squares (a², b²);
// the second catches dependence that leaves the first at zero, such as a shared radius.
type pearson struct {
	n                          float64
	sa, sb, saa, sbb, sab      float64 // of a and b
	qa, qb, qaa, qbb, qab, max float64 // of a² and b²
}

func (p *pearson) add(a32, b32 float32) {
	a, b := float64(a32), float64(b32)
	p.n++
	p.sa += a
	p.sb += b
	p.saa += a * a
	p.sbb += b * b
	p.sab += a * b
	a2, b2 := a*a, b*b
	p.qa += a2
	p.qb += b2
	p.qaa += a2 * a2
	p.qbb += b2 * b2
	p.qab += a2 * b2
}

func corr(n, sa, sb, saa, sbb, sab float64) float64 {
	cov := sab/n - (sa/n)*(sb/n)
	va := saa/n - (sa/n)*(sa/n)
	vb := sbb/n - (sb/n)*(sb/n)
	return cov / math.Sqrt(va*vb)
}

// r is the correlation of the values, r2 that of their squares.
func (p *pearson) r() float64  { return corr(p.n, p.sa, p.sb, p.saa, p.sbb, p.sab) }
func (p *pearson) r2() float64 { return corr(p.n, p.qa, p.qb, p.qaa, p.qbb, p.qab) }

// check fails unless both correlations are within 5 standard errors (1/√n each) of zero.
func (p *pearson) check(t *testing.T, name string) {
	t.Helper()
	bound := 5 / math.Sqrt(p.n)
	r, r2 := p.r(), p.r2()
	t.Logf("%-34s n=%.0e  corr(z)=%+.5f  corr(z²)=%+.5f  (bound ±%.4f)", name, p.n, r, r2, bound)
	if math.Abs(r) > bound || math.Abs(r2) > bound {
		t.Errorf("%s: correlation %+.5f, of squares %+.5f, exceeds ±%.4f", name, r, r2, bound)
	}
}

// kolmogorovQ is the asymptotic survival function of √n·D under the null hypothesis,
// Q(λ) = 2 Σ_{k≥1} (-1)^(k-1) exp(-2k²λ²).
func kolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	sum := 0.0
	for k := 1; k <= 100; k++ {
		term := math.Exp(-2 * float64(k*k) * lambda * lambda)
		if k%2 == 0 {
			term = -term
		}
		sum += term
		if math.Abs(term) < 1e-16 {
			break
		}
	}
	return 2 * sum
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func TestQualityDistribution(t *testing.T) {
	checkNormal(t, 4_000_000, math.Sqrt(66*math.Ln2), func(add func(float32)) {
		for g := uint64(0); g < 1_000_000; g++ {
			// Spread the groups over the element space (both halves of the group counter)
			// and over steps, rather than one contiguous block; odd multiplier, so all
			// distinct.
			group := g * 0x9e3779b97f4a7c15 & (1<<62 - 1)
			for _, z := range Normal4(qualitySeed, uint32(g%1000), 0, group) {
				add(z)
			}
		}
	})
}

// qualityKey is the secure scheme's key in the quality tests.
var qualityKey = Key{qualitySeed, ^uint64(qualitySeed), 0x243f6a8885a308d3, 0x13198a2e03707344}

// TestSecureQualityDistribution is TestQualityDistribution for the secure scheme's draws,
// before snapping: 4e6 draws, 5e5 octets spread over the element space and steps.
func TestSecureQualityDistribution(t *testing.T) {
	checkNormal(t, 4_000_000, math.Sqrt(194*math.Ln2), func(add func(float32)) {
		for o := uint64(0); o < 500_000; o++ {
			octet := o * 0x9e3779b97f4a7c15 & (1<<61 - 1)
			for _, z := range SecureNormal8(qualityKey, uint32(o%1000), 0, octet) {
				add(z)
			}
		}
	})
}

// checkNormal tests the n draws that draw adds against N(0,1) (moments, tails, the largest
// |z| against the scheme's tail cut rMax, Kolmogorov-Smirnov).
func checkNormal(t *testing.T, n int, rMax float64, draw func(add func(float32))) {
	zs := make([]float64, 0, n)
	var m moments
	draw(func(z float32) {
		m.add(z)
		zs = append(zs, float64(z))
	})
	if len(zs) != n {
		t.Fatalf("%d draws, want %d", len(zs), n)
	}
	nf := float64(n)
	mean := m.s1 / nf
	variance := m.s2/nf - mean*mean
	sd := math.Sqrt(variance)
	c3 := m.s3/nf - 3*mean*m.s2/nf + 2*mean*mean*mean
	c4 := m.s4/nf - 4*mean*m.s3/nf + 6*mean*mean*m.s2/nf - 3*mean*mean*mean*mean
	skew := c3 / (sd * sd * sd)
	exKurt := c4/(variance*variance) - 3

	// Standard errors for N(0,1) samples: mean 1/√n, variance √(2/n), skewness √(6/n),
	// excess kurtosis √(24/n); a tail fraction p has √(p(1-p)/n).
	se := func(v float64) float64 { return math.Sqrt(v / nf) }
	p3 := math.Erfc(3 / math.Sqrt2) // P(|z| > 3) = 0.0026998
	p4 := math.Erfc(4 / math.Sqrt2) // P(|z| > 4) = 6.334e-5
	f3, f4 := m.tail3/nf, m.tail4/nf
	for _, c := range []struct {
		name      string
		got, want float64
		se        float64
	}{
		{"mean", mean, 0, se(1)},
		{"variance", variance, 1, se(2)},
		{"skewness", skew, 0, se(6)},
		{"excess kurtosis", exKurt, 0, se(24)},
		{"P(|z|>3)", f3, p3, se(p3 * (1 - p3))},
		{"P(|z|>4)", f4, p4, se(p4 * (1 - p4))},
	} {
		t.Logf("%-16s %+.6f (want %.6f, 5 s.e. = %.6f, off by %+.2f s.e.)", c.name, c.got, c.want,
			5*c.se, (c.got-c.want)/c.se)
		if math.Abs(c.got-c.want) > 5*c.se {
			t.Errorf("%s = %g, want %g ± %g (5 standard errors)", c.name, c.got, c.want, 5*c.se)
		}
	}
	t.Logf("max |z| = %.4f (the tail cut, the radius at the smallest u: %.4f)", m.maxZ, rMax)
	if m.maxZ > rMax+1e-5 {
		t.Errorf("max |z| = %g beyond the tail cut %g", m.maxZ, rMax)
	}

	// Kolmogorov-Smirnov against N(0,1). The asymptotic critical value of √n·D at α = 1e-3
	// is 1.9495 (Q(1.9495) = 1e-3); with n = 4e6 the exact and asymptotic distributions agree
	// to far better than that. Ties from float32 rounding only make the test conservative.
	slices.Sort(zs)
	d := 0.0
	for i, z := range zs {
		f := normalCDF(z)
		d = max(d, f-float64(i)/nf, float64(i+1)/nf-f)
	}
	lambda := math.Sqrt(nf) * d
	const alpha = 1e-3
	crit := 1.9495
	if q := kolmogorovQ(crit); math.Abs(q-alpha) > 1e-5 {
		t.Fatalf("Kolmogorov Q(%g) = %g, want %g", crit, q, alpha)
	}
	t.Logf("KS: n=%.0e D=%.3e sqrt(n)D=%.4f p=%.3f (critical sqrt(n)D at alpha=%g: %.4f, D: %.3e)",
		nf, d, lambda, kolmogorovQ(lambda), alpha, crit, crit/math.Sqrt(nf))
	if lambda > crit {
		t.Errorf("Kolmogorov-Smirnov: sqrt(n)D = %.4f > %.4f (p = %.2g < %g)", lambda, crit, kolmogorovQ(lambda), alpha)
	}
}

func TestQualityIndependence(t *testing.T) {
	const n = 1_000_000

	// Lanes of one group share one Philox output: (0,1) share the radius and angle words
	// (cos and sin of one angle), (2,3) likewise, (0,2) and (1,3) and (1,2) use different
	// words of the same output; (3, next group's 0) are neighbours across a group boundary.
	var lane01, lane23, lane02, lane13, lane12, lane30 pearson
	next := Normal4(qualitySeed, 7, 0, 0)
	for g := uint64(0); g < n; g++ {
		cur := next
		next = Normal4(qualitySeed, 7, 0, g+1)
		lane01.add(cur[0], cur[1])
		lane23.add(cur[2], cur[3])
		lane02.add(cur[0], cur[2])
		lane13.add(cur[1], cur[3])
		lane12.add(cur[1], cur[2])
		lane30.add(cur[3], next[0])
	}
	lane01.check(t, "elements 4g, 4g+1 (one pair)")
	lane23.check(t, "elements 4g+2, 4g+3 (one pair)")
	lane02.check(t, "elements 4g, 4g+2")
	lane13.check(t, "elements 4g+1, 4g+3")
	lane12.check(t, "elements 4g+1, 4g+2 (across pairs)")
	lane30.check(t, "elements 4g+3, 4g+4 (across groups)")

	// Adjacent steps, same element: 1000 elements followed over 1000 steps each, the noise
	// sequence a temporal filter sees.
	var steps pearson
	for i := uint64(0); i < n; i++ {
		e, s := i%1000, uint32(i/1000)
		steps.add(Normal(qualitySeed, s, 0, e), Normal(qualitySeed, s+1, 0, e))
	}
	steps.check(t, "steps s, s+1 (same element)")

	// Different noise sites, same step and element.
	var sites pearson
	for e := uint64(0); e < n; e++ {
		sites.add(Normal(qualitySeed, 3, 0, e), Normal(qualitySeed, 3, 1, e))
	}
	sites.check(t, "sites 0, 1 (same step, element)")

	// Neighbouring seeds, everything else equal.
	var seeds pearson
	for e := uint64(0); e < n; e++ {
		seeds.add(Normal(qualitySeed, 3, 0, e), Normal(qualitySeed+1, 3, 0, e))
	}
	seeds.check(t, "seeds k, k+1 (same step, element)")
}

// counterOf is the Philox input and the lane that element elem of (step, site) uses.
func counterOf(step, site uint32, elem uint64) (ctr [4]uint32, lane uint32) {
	ctr, _ = philoxInput(0, step, site, elem>>2)
	return ctr, uint32(elem & 3)
}

// TestCounterInjective checks that no two (element, step, site) triples draw from the same
// Philox counter and lane, so that no noise is ever reused under one seed. The argument: the
// counter is the concatenation [group low 32 bits, group high 32 bits, step, site] with
// group = elem>>2 < 2^62, so (group, step, site) is recovered from the counter word by word,
// and elem = 4*group + lane; the map is therefore injective for every elem < 2^64 and every
// uint32 step and site (steps must stay below 2^32). Philox under a fixed key is a bijection
// of the 128-bit counter, and the lane picks a different output word pair (lanes 0,1 vs 2,3)
// or the other of cos/sin (lane parity). Different seeds use different keys.
// The test inverts the map on edge cases that a careless layout would collide.
func TestCounterInjective(t *testing.T) {
	type triple struct {
		elem       uint64
		step, site uint32
	}
	cases := []triple{
		{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {4, 0, 0},
		{1 << 32, 0, 0}, {1 << 34, 0, 0}, {1<<34 + 1, 0, 0}, {1 << 35, 0, 0},
		{1 << 62, 0, 0}, {1 << 63, 0, 0}, {1<<64 - 1, 0, 0}, {1<<64 - 4, 0, 0}, {1<<64 - 5, 0, 0},
		{0, 1, 0}, {0, 0, 1}, {4, 1, 0}, {1 << 34, 1, 0},
		{0, ^uint32(0), 0}, {0, 0, ^uint32(0)}, {1<<64 - 1, ^uint32(0), ^uint32(0)},
		{1<<32 - 1, 0, 0}, {1<<34 - 1, 0, 0}, {1<<34 - 4, 1, 0},
	}
	// Also a dense block around each case.
	var all []triple
	for _, c := range cases {
		for d := uint64(0); d < 9; d++ {
			for ds := uint32(0); ds < 3; ds++ {
				all = append(all, triple{c.elem + d, c.step + ds, c.site}, triple{c.elem - d, c.step - ds, c.site + ds})
			}
		}
	}
	type slot struct {
		ctr  [4]uint32
		lane uint32
	}
	seen := map[slot]triple{}
	for _, c := range all {
		ctr, lane := counterOf(c.step, c.site, c.elem)
		back := triple{(uint64(ctr[0])|uint64(ctr[1])<<32)<<2 | uint64(lane), ctr[2], ctr[3]}
		if back != c {
			t.Errorf("%+v -> ctr %08x lane %d -> %+v", c, ctr, lane, back)
		}
		if prev, ok := seen[slot{ctr, lane}]; ok && prev != c {
			t.Errorf("%+v and %+v share counter %08x lane %d", prev, c, ctr, lane)
		}
		seen[slot{ctr, lane}] = c
	}
	// Elements 2^34 apart (group differs by 2^32) and steps/sites that differ only in the
	// bits above 32 of a wider type must not draw the same noise.
	if Normal(1, 0, 0, 0) == Normal(1, 0, 0, 1<<34) || Normal(1, 0, 0, 5) == Normal(1, 0, 0, 1<<32+5) {
		t.Error("elements 2^32 or 2^34 apart draw the same noise")
	}
}

// TestSecureSnappedBins: the snapped secure noise with sigma 1 (grid 2^-8, x = 0) lands on
// grid point k with the probability of the ideal rounded Gaussian, Φ((k+½)/256) − Φ((k−½)/256):
// a chi-square test over 4e6 draws, bins with fewer than 20 expected merged into the tails,
// at α = 1e-3 (Wilson-Hilferty's critical value). This is the distribution the privacy analysis
// takes as the Gaussian mechanism's output rounded to the grid (docs/noise.md).
func TestSecureSnappedBins(t *testing.T) {
	const octets = 500_000
	const n = 8 * octets
	counts := map[int]int{}
	for o := uint64(0); o < octets; o++ {
		for _, z := range SecureNormal8(qualityKey, 3, 0, o*0x9e3779b97f4a7c15&(1<<61-1)) {
			y := SnapNoise(0, 1, z)
			counts[int(y*256)]++
		}
	}
	p := func(k int) float64 { return normalCDF((float64(k)+0.5)/256) - normalCDF((float64(k)-0.5)/256) }
	edge := 0 // bins k with |k| < edge have at least 20 expected
	for n*p(edge) >= 20 {
		edge++
	}
	chi2, df := 0.0, -1
	addBin := func(obs int, exp float64) {
		chi2 += (float64(obs) - exp) * (float64(obs) - exp) / exp
		df++
	}
	lowObs, highObs := 0, 0
	for k, c := range counts {
		switch {
		case k <= -edge:
			lowObs += c
		case k >= edge:
			highObs += c
		}
	}
	for k := -edge + 1; k < edge; k++ {
		addBin(counts[k], n*p(k))
	}
	tail := n * normalCDF((-float64(edge)+0.5)/256)
	addBin(lowObs, tail)
	addBin(highObs, tail)
	d := float64(df)
	crit := d * math.Pow(1-2/(9*d)+3.0902*math.Sqrt(2/(9*d)), 3)
	t.Logf("chi-square %.1f on %d degrees of freedom (critical at alpha = 1e-3: %.1f)", chi2, df, crit)
	if chi2 > crit {
		t.Errorf("snapped secure noise: chi-square %.1f > %.1f on %d degrees of freedom", chi2, crit, df)
	}
}

// TestSecureQualityIndependence is TestQualityIndependence's checks for the secure scheme: the
// elements of one ChaCha20 block (a pair's cos and sin; two pairs; across octets), adjacent
// steps, sites and keys one bit apart, 1e6 pairs each.
func TestSecureQualityIndependence(t *testing.T) {
	const n = 1_000_000
	var pair, pairs, octets, steps, sites, keys pearson
	other := qualityKey
	other[2] ^= 1
	next := SecureNormal8(qualityKey, 7, 0, 0)
	for o := uint64(0); o < n/4; o++ {
		cur := next
		next = SecureNormal8(qualityKey, 7, 0, o+1)
		for p := 0; p < 4; p++ {
			pair.add(cur[p], cur[4+p])
			pairs.add(cur[p], cur[(p+1)%4])
		}
		octets.add(cur[7], next[0])
	}
	for i := uint64(0); i < n; i++ {
		e, s := i%1000, uint32(i/1000)
		steps.add(SecureNormal(qualityKey, s, 0, e), SecureNormal(qualityKey, s+1, 0, e))
		sites.add(SecureNormal(qualityKey, 3, 0, i), SecureNormal(qualityKey, 3, 1, i))
		keys.add(SecureNormal(qualityKey, 3, 0, i), SecureNormal(other, 3, 0, i))
	}
	pair.check(t, "elements 8o+p, 8o+4+p (one pair)")
	pairs.check(t, "elements 8o+p, 8o+(p+1)%4 (two pairs)")
	octets.check(t, "elements 8o+7, 8o+8 (across octets)")
	steps.check(t, "steps s, s+1 (same element)")
	sites.check(t, "sites 0, 1 (same step, element)")
	keys.check(t, "keys one bit apart")
}
