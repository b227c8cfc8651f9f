package rng

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// Mode is a step's noise scheme, as the kernels' noise argument carries it.
type Mode uint32

const (
	// Off adds no noise: the gradient is privatized already.
	Off Mode = 0
	// Philox is the default scheme, Version: Philox4x32-10 keyed by a 64-bit seed.
	Philox Mode = 1
	// Secure is the scheme SecureVersion: ChaCha20 keyed by a 256-bit secret, the noise
	// snapped to a grid.
	Secure Mode = 2
)

// String is the mode's name on the command line and in the ABI's options.
func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case Philox:
		return "philox"
	case Secure:
		return "secure"
	}
	return fmt.Sprintf("Mode(%d)", uint32(m))
}

// Scheme is the version string of the mode's scheme: Version for Philox,
// SecureVersion for Secure, "" for Off and any other.
func (m Mode) Scheme() string {
	switch m {
	case Philox:
		return Version
	case Secure:
		return SecureVersion
	}
	return ""
}

// ParseMode reads a noise mode's name: "philox" or "secure" (the modes a run can draw in).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "philox":
		return Philox, nil
	case "secure":
		return Secure, nil
	}
	return Off, fmt.Errorf("noise mode %q: want philox or secure", s)
}

// Key is the secure scheme's 256-bit key, as four little-endian 64-bit words.
// It prints as a placeholder under every fmt verb (Format), so that no %v or
// %d of a struct holding one writes the secret.
type Key [4]uint64

// String hides the key.
func (Key) String() string { return "rng.Key(secret)" }

// Format hides the key from every fmt verb.
func (k Key) Format(f fmt.State, _ rune) { fmt.Fprint(f, k.String()) }

// RandomKey draws a secure key from the operating system's generator (getrandom on Linux),
// or reports why it could not: a secure run never falls back to a weaker source.
func RandomKey() (Key, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Key{}, fmt.Errorf("secure noise: the operating system's random source: %w", err)
	}
	var k Key
	for i := range k {
		k[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return k, nil
}

// Stream is where a step's noise comes from: its mode, the seed (Philox) or key (Secure) and
// the step counter.
type Stream struct {
	Mode Mode
	Seed uint64
	Key  Key
	Step uint32
}

// Privatize writes g[i] plus the noise of global element offset+i into dst[i], exactly as the
// generated step kernels add it: g + sigmaW·z (Philox), or the same snapped to the grid
// (Secure); Off copies g. Any other mode is a caller's bug: it panics rather than guess a
// scheme (the kernels, given one, write nothing).
func (s Stream) Privatize(dst, g []float32, sigmaW float32, offset uint64) {
	if !s.drawing("Privatize") {
		copy(dst, g)
		return
	}
	var c noiseCache
	for i := range g {
		dst[i] = addNoise(s.Mode == Secure, s.Seed, s.Key, s.Step, offset+uint64(i), g[i], sigmaW, &c)
	}
}

// Draw writes z, the standard normal draw of global element offset+i, into dst[i], as the
// step of a noise block draws it (docs/dsl.md, "Correlated noise"); Off writes 0. sigmaW
// sets the secure grid only.
func (s Stream) Draw(dst []float32, sigmaW float32, offset uint64) {
	if !s.drawing("Draw") {
		clear(dst)
		return
	}
	var c noiseCache
	for i := range dst {
		dst[i] = drawNoise(s.Mode == Secure, s.Seed, s.Key, s.Step, offset+uint64(i), sigmaW, &c)
	}
}

// Add writes x[i] + sigmaW·w[i] into dst[i], w the noise of a noise block in units of
// sigmaW, as its step privatizes g: snapped to the grid in the secure scheme; Off copies x.
func (s Stream) Add(dst, x, w []float32, sigmaW float32) {
	if !s.drawing("Add") {
		copy(dst, x)
		return
	}
	c := noiseCache{ok: true} // the grid, once: no draw is cached
	c.gamma, c.inv = snapUnit(sigmaW)
	for i := range dst {
		dst[i] = privatizeNoise(s.Mode == Secure, x[i], sigmaW, w[i], &c)
	}
}

// drawing reports whether s draws noise: false for Off, true for Philox and Secure; any
// other mode panics (a caller's bug, as in Privatize).
func (s Stream) drawing(what string) bool {
	switch s.Mode {
	case Off:
		return false
	case Philox, Secure:
		return true
	}
	panic(fmt.Sprintf("rng: Stream.%s in %v", what, s.Mode))
}
