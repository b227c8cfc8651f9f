// The noise a step adds to one coordinate, in either scheme, for the Go reference and the
// generated Go packages (which splice this file, DrawSource, beside core.go and secure.go).

package rng

// GradientSite is the noise site of the gradient noise a step kernel draws.
const GradientSite = 0

// noiseCache keeps the draws of the last block of elements drawn together: a Philox group of
// four or a secure octet of eight, and the secure grid (snapUnit) of the sigma they were
// drawn for.
type noiseCache struct {
	block      uint64
	z          [8]float32
	gamma, inv float32
	ok         bool
}

// addNoise returns x plus the noise of element e at step under the scheme secure says:
// x + sigma·z with z Philox's draw under seed, or the secure draw under key snapped to its
// grid (snapNoise). c keeps the block's draws and grid between calls on consecutive elements
// of one step, whose sigma is one.
func addNoise(secure bool, seed uint64, key [4]uint64, step uint32, e uint64, x, sigma float32, c *noiseCache) float32 {
	return privatizeNoise(secure, x, sigma, drawNoise(secure, seed, key, step, e, sigma, c), c)
}

// drawNoise returns z, the standard normal draw of element e at step in the scheme secure
// says, keeping its block's draws (and, secure, the grid of sigma) in c.
func drawNoise(secure bool, seed uint64, key [4]uint64, step uint32, e uint64, sigma float32, c *noiseCache) float32 {
	if secure {
		if !c.ok || c.block != e>>3 {
			c.block, c.z, c.ok = e>>3, secureGaussian8(key, step, GradientSite, e>>3), true
			c.gamma, c.inv = snapUnit(sigma)
		}
		return c.z[e&7]
	}
	if !c.ok || c.block != e>>2 {
		z := gaussian4(seed, step, GradientSite, e>>2)
		c.block, c.z, c.ok = e>>2, [8]float32{z[0], z[1], z[2], z[3]}, true
	}
	return c.z[e&3]
}

// privatizeNoise returns x + sigma·w, the noise w in units of sigma (a draw, or a
// correlated combination of draws: docs/dsl.md, "Correlated noise"), snapped to the grid of
// sigma in the secure scheme. A secure c holds that grid once drawNoise has run.
func privatizeNoise(secure bool, x, sigma, w float32, c *noiseCache) float32 {
	if secure {
		if !c.ok {
			c.gamma, c.inv = snapUnit(sigma)
		}
		return snapNoise(x, sigma, w, c.gamma, c.inv)
	}
	return x + float32(sigma*w)
}
