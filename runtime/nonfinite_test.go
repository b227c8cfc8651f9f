package runtime

import (
	"math"
	"testing"
)

// TestFirstNonFinite puts one NaN, +Inf or -Inf at every position of
// slices of every length up to three blocks, at both 8-byte alignments:
// the screen finds exactly the first, and nothing in finite data, the
// largest finite float included.
func TestFirstNonFinite(t *testing.T) {
	backing := make([]float32, 3*1024+9)
	for i := range backing {
		backing[i] = float32(i%7) - 3
	}
	backing[100] = math.MaxFloat32
	backing[101] = -math.MaxFloat32
	for _, start := range []int{0, 1} {
		for _, n := range []int{0, 1, 2, 3, 1023, 1024, 1025, 2049, 3*1024 + 8} {
			g := backing[start : start+n]
			if got := firstNonFinite(g); got != -1 {
				t.Fatalf("start %d, n %d: finite data reported at %d", start, n, got)
			}
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				for _, at := range []int{0, n / 2, n - 1} {
					if n == 0 {
						continue
					}
					old := g[at]
					g[at] = bad
					if got := firstNonFinite(g); got != at {
						t.Errorf("start %d, n %d: %v at %d found at %d", start, n, bad, at, got)
					}
					g[at] = old
				}
			}
		}
	}
}

func BenchmarkFirstNonFinite(b *testing.B) {
	g := make([]float32, 1<<22)
	b.SetBytes(4 << 22)
	for b.Loop() {
		firstNonFinite(g)
	}
}
