package rng

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

// The distribution tests at 10⁹ draws, a benchmark because they take minutes:
//
//	go test ./rng -run '^$' -bench Distribution1e9 -benchtime 1x -v
//
// Each scheme's draws (Philox's Normal4, the secure scheme's SecureNormal8 before snapping)
// are binned in 2^22 bins over [-10, 10]: the Kolmogorov-Smirnov distance is read at the bin
// edges, which bounds it within one bin's probability (at most 1.9e-6, against a critical
// distance of 6.2e-5 at α = 1e-3), and the tails are counted exactly. docs/noise.md records
// the results.

const (
	longDraws = 1_000_000_000
	longBins  = 1 << 22
	longSpan  = 10.0
)

// longStats is what one goroutine's share of the draws leaves.
type longStats struct {
	hist              []uint32
	below, above      int    // draws beyond ±longSpan
	tails             [4]int // |z| > 3, 4, 5, 6
	sum, sum2, maxAbs float64
}

func (s *longStats) add(z float32) {
	x := float64(z)
	s.sum += x
	s.sum2 += x * x
	a := math.Abs(x)
	s.maxAbs = max(s.maxAbs, a)
	for i, c := range []float64{3, 4, 5, 6} {
		if a > c {
			s.tails[i]++
		}
	}
	switch b := int(math.Floor((x + longSpan) / (2 * longSpan) * longBins)); {
	case b < 0:
		s.below++
	case b >= longBins:
		s.above++
	default:
		s.hist[b]++
	}
}

// longRun draws longDraws values on every core: block(i) yields the draws of block i.
func longRun(blocks uint64, block func(i uint64, add func(float32))) *longStats {
	workers := runtime.NumCPU()
	parts := make([]*longStats, workers)
	var wg sync.WaitGroup
	for w := range workers {
		parts[w] = &longStats{hist: make([]uint32, longBins)}
		wg.Go(func() {
			for i := uint64(w); i < blocks; i += uint64(workers) {
				block(i, parts[w].add)
			}
		})
	}
	wg.Wait()
	all := parts[0]
	for _, p := range parts[1:] {
		for i, c := range p.hist {
			all.hist[i] += c
		}
		all.below, all.above = all.below+p.below, all.above+p.above
		for i := range all.tails {
			all.tails[i] += p.tails[i]
		}
		all.sum, all.sum2, all.maxAbs = all.sum+p.sum, all.sum2+p.sum2, max(all.maxAbs, p.maxAbs)
	}
	return all
}

// report logs and reports the statistics of n draws against N(0,1).
func (s *longStats) report(b *testing.B, n int) {
	nf := float64(n)
	cum, d := float64(s.below), 0.0
	for i, c := range s.hist {
		lo := -longSpan + 2*longSpan*float64(i)/longBins
		d = max(d, math.Abs(cum/nf-normalCDF(lo)))
		cum += float64(c)
	}
	d = max(d, math.Abs(cum/nf-normalCDF(longSpan)))
	lambda := math.Sqrt(nf) * d
	b.Logf("n=%.0e mean %+.2e variance %.6f max|z| %.4f KS sqrt(n)D=%.4f (p=%.3f; alpha=1e-3 at 1.9495)", nf, s.sum/nf, s.sum2/nf, s.maxAbs, lambda, kolmogorovQ(lambda))
	for i, c := range []float64{3, 4, 5, 6} {
		p := math.Erfc(c / math.Sqrt2)
		b.Logf("P(|z|>%g): %d draws, expected %.1f (%+.2f s.e.)", c, s.tails[i], nf*p, (float64(s.tails[i])-nf*p)/math.Sqrt(nf*p*(1-p)))
	}
	b.ReportMetric(lambda, "sqrt(n)D")
	b.ReportMetric(kolmogorovQ(lambda), "KS-p")
}

func BenchmarkDistribution1e9(b *testing.B) {
	for _, s := range []struct {
		name  string
		per   uint64 // draws a block
		block func(i uint64, add func(float32))
	}{
		{"philox", 4, func(i uint64, add func(float32)) {
			for _, z := range Normal4(qualitySeed, uint32(i>>20), 0, i&(1<<20-1)) {
				add(z)
			}
		}},
		{"secure", 8, func(i uint64, add func(float32)) {
			for _, z := range SecureNormal8(qualityKey, uint32(i>>20), 0, i&(1<<20-1)) {
				add(z)
			}
		}},
	} {
		b.Run(s.name, func(b *testing.B) {
			for range b.N {
				longRun(longDraws/s.per, s.block).report(b, longDraws)
			}
		})
	}
}
