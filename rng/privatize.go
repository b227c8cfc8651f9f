package rng

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
)

// SigmaW is the standard deviation of the noise for the DP noise variance
// per coordinate sigmaW2, as every target computes it: the float32 nearest
// sqrt(sigmaW2).
func SigmaW(sigmaW2 float64) float32 { return float32(math.Sqrt(sigmaW2)) }

// CheckStep reports a step index the noise counter cannot hold.
func CheckStep(t int) error {
	if t < 0 || t > math.MaxUint32 {
		return fmt.Errorf("step %d: the noise generator counts steps 0 to 2^32-1", t)
	}
	return nil
}

// Privatize writes g[i] + sigmaW·z into dst[i], z the Gaussian of global
// element offset+i at (seed, step, GradientSite): what the generated step
// kernels and Go packages add to the gradient, bit for bit.
func Privatize(dst, g []float32, sigmaW float32, seed uint64, step uint32, offset uint64) {
	Stream{Mode: Philox, Seed: seed, Step: step}.Privatize(dst, g, sigmaW, offset)
}

// RandomSeed draws a noise seed from the operating system's generator, for
// runs whose user fixed none: two runs never share noise by accident.
func RandomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
