package poly

import (
	"math/big"
	"testing"
)

// BenchmarkLyapunov times the symbolic solve of each test filter's
// stationary covariance, from its matrices to the canonical Σ.
func BenchmarkLyapunov(b *testing.B) {
	for _, f := range []filter{fiber, alphaBeta, alphaBetaGamma, emaCascade} {
		m, v := matrix(b, f.m...), fracs(b, f.b...)
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Lyapunov(m, v, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLyapunovRat times the numeric solve of the alpha-beta-gamma
// tracker at one point, the run-time fallback.
func BenchmarkLyapunovRat(b *testing.B) {
	f := alphaBetaGamma
	x := point(1, 2, 1, 5, 1, 20)
	m, v := matrix(b, f.m...), fracs(b, f.b...)
	mr, vr := make([][]*big.Rat, len(m)), make([]*big.Rat, len(v))
	for i := range m {
		mr[i] = make([]*big.Rat, len(m))
		for j := range m {
			mr[i][j], _ = m[i][j].Eval(x)
		}
		vr[i], _ = v[i].Eval(x)
	}
	for b.Loop() {
		if _, err := LyapunovRat(mr, vr); err != nil {
			b.Fatal(err)
		}
	}
}
