package rng

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// words reads a hex byte string (spaces ignored) as little-endian 32-bit words, RFC 8439's
// serialization.
func words(t *testing.T, s string) []uint32 {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// TestChaCha20KAT checks the block function against RFC 8439's test vectors: section 2.3.2
// and appendix A.1's first two.
func TestChaCha20KAT(t *testing.T) {
	for _, tc := range []struct {
		name, key, ctr, want string
	}{
		{"2.3.2", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
			"01000000 00000009 0000004a 00000000",
			"10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e" +
				"d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"},
		{"A.1 #1", strings.Repeat("00", 32), "00000000 00000000 00000000 00000000",
			"76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7" +
				"da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"},
		{"A.1 #2", strings.Repeat("00", 32), "01000000 00000000 00000000 00000000",
			"9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed" +
				"29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"},
	} {
		k, c, want := words(t, tc.key), words(t, tc.ctr), words(t, tc.want)
		got := ChaCha20Block([8]uint32(k), [4]uint32(c))
		if [16]uint32(want) != got {
			t.Errorf("RFC 8439 %s: block = %08x, want %08x", tc.name, got, want)
		}
	}
}

// TestUint64ToFloat32 holds Go's uint64 → float32 conversion, which the secure radius uses, to
// round to nearest even (the kernels' uitofp), checked exactly with math/big.
func TestUint64ToFloat32(t *testing.T) {
	cases := []uint64{0, 1, 1<<24 - 1, 1 << 24, 1<<24 + 1, 1<<25 + 3, 1<<63 - 1, 1 << 63, 1<<63 + 1<<39, 1<<63 + 1<<39 + 1,
		math.MaxUint64, math.MaxUint64 - 1<<39, math.MaxUint64 - 1<<39 + 1, 0x0123456789abcdef}
	x := uint64(0x9e3779b97f4a7c15)
	for range 100000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		cases = append(cases, x, x>>(x&63), x&^(1<<(x&31)-1)|1<<(x&31)>>1)
	}
	for _, v := range cases {
		want, _ := new(big.Float).SetPrec(24).SetMode(big.ToNearestEven).SetUint64(v).Float32()
		if got := float32(v); got != want {
			t.Fatalf("float32(%#x) = %g, want %g", v, got, want)
		}
	}
}

// TestSecureNormal8MatchesNormal holds the one-element draw to the octet's.
func TestSecureNormal8MatchesNormal(t *testing.T) {
	key := Key{1, 2, 3, 4}
	for _, octet := range []uint64{0, 1, 1 << 29, 1<<61 - 1} {
		all := SecureNormal8(key, 7, 0, octet)
		for i, z := range all {
			if got := SecureNormal(key, 7, 0, 8*octet+uint64(i)); math.Float32bits(got) != math.Float32bits(z) {
				t.Errorf("octet %d element %d: %g, want %g", octet, i, got, z)
			}
		}
	}
}

// TestSecureGolden pins draws of SecureVersion; the kernels are held to the same function.
func TestSecureGolden(t *testing.T) {
	key := Key{0x0706050403020100, 0x0f0e0d0c0b0a0908, 0x1716151413121110, 0x1f1e1d1c1b1a1918}
	got := SecureNormal8(key, 0, 0, 0)
	var bits [8]uint32
	for i, z := range got {
		bits[i] = math.Float32bits(z)
	}
	want := [8]uint32{0x3eb2f8fe, 0xbf68ed1b, 0xbf5423ea, 0xbff66103, 0xbe71c11f, 0xbfcf38cb, 0x3eff3de3, 0x3fc5325c}
	if bits != want {
		t.Errorf("SecureNormal8(RFC key, 0, 0, 0) = %08x, want %08x", bits, want)
	}
}

// TestSnapUnit checks the grid against its definition for sigma across the exponent range.
func TestSnapUnit(t *testing.T) {
	for _, sigma := range []float32{1, 1.5, 0.99999994, 3e-3, 1e-30, 0x1p-117, 1e30, math.MaxFloat32} {
		gamma, inv := SnapUnit(sigma)
		r := float64(sigma) / float64(gamma)
		if !(r >= 256 && r < 512) || gamma*inv != 1 {
			t.Errorf("SnapUnit(%g) = %g, %g: sigma/gamma = %g, want in [256, 512) and gamma·inv = 1", sigma, gamma, inv, r)
		}
	}
	for _, sigma := range []float32{0, 0x1p-118, 1e-40, float32(math.Inf(1)), float32(math.NaN())} {
		if gamma, inv := SnapUnit(sigma); gamma != 0 || inv != 0 {
			t.Errorf("SnapUnit(%g) = %g, %g, want no grid", sigma, gamma, inv)
		}
	}
}

// TestSnapNoiseOnGrid: every output is a multiple of the grid, the rounding is to nearest
// (ties to even) of the float32 sum, and large sums stay where they are.
func TestSnapNoiseOnGrid(t *testing.T) {
	key := Key{9, 8, 7, 6}
	for _, sigma := range []float32{1, 0.37, 2.5e-4, 6e-8} {
		gamma, _ := SnapUnit(sigma)
		for e := uint64(0); e < 4096; e++ {
			z := SecureNormal(key, 3, 0, e)
			x := float32(math.Sin(float64(e))) * sigma * 3
			y := SnapNoise(x, sigma, z)
			q := float64(y) / float64(gamma)
			if q != math.Round(q) {
				t.Fatalf("sigma %g: SnapNoise(%g, z=%g) = %g = %g·γ: not on the grid", sigma, x, z, y, q)
			}
			if d := math.Abs(float64(x+sigma*z) - float64(y)); d > float64(gamma)/2*(1+1e-6) {
				t.Fatalf("sigma %g: SnapNoise(%g, z=%g) = %g, %g from the sum, more than γ/2", sigma, x, z, y, d)
			}
		}
	}
	// Beyond 2^22·γ the float32 sum is already coarser than the grid: its
	// quotient is an integer, kept (no clamp moves a large gradient).
	for _, x := range []float32{1 << 14, 3<<13 + 0.25, 1e30, -5e7} {
		y := SnapNoise(x, 1, 0)
		if q := float64(y) * 256; q != math.Round(q) || math.Abs(float64(y-x)) > 1.0/512 {
			t.Errorf("SnapNoise(%g, 1, 0) = %g: want a multiple of 2^-8 within half of it", x, y)
		}
	}
	if y := SnapNoise(float32(math.NaN()), 1, 1); y == y {
		t.Errorf("SnapNoise(NaN) = %g, want NaN", y)
	}
}

// TestDeriveKey: derived keys differ from the key, from each other, and are functions of both.
func TestDeriveKey(t *testing.T) {
	key := Key{1, 2, 3, 4}
	seen := map[Key]bool{key: true}
	for label := uint64(0); label < 64; label++ {
		k := DeriveKey(key, label)
		if seen[k] {
			t.Fatalf("DeriveKey(key, %d) repeats a key", label)
		}
		seen[k] = true
		if DeriveKey(key, label) != k {
			t.Fatal("DeriveKey is not a function")
		}
	}
}

// TestSecureMatchesFloat64 holds the float32 transform to Box-Muller in float64 on the same
// cipher words: within 4e-6 relative, and the pairs where cos or sin is taken as documented.
func TestSecureMatchesFloat64(t *testing.T) {
	key := Key{0xdeadbeef, 0, 1 << 63, 42}
	for octet := uint64(0); octet < 2000; octet++ {
		x := ChaCha20Block(keyWords(key), octetCounter(5, 0, octet))
		got := SecureNormal8(key, 5, 0, octet)
		for p := 0; p < 4; p++ {
			u := (float64(x[12+p])*0x1p64 + float64(x[4+p])*0x1p32 + float64(x[p]) + 0.5) * 0x1p-96
			r := math.Sqrt(-2 * math.Log(u))
			th := 2 * math.Pi * (float64(x[8+p]) + 0.5) / (1 << 32)
			for i, want := range []float64{r * math.Cos(th), r * math.Sin(th)} {
				if d := math.Abs(float64(got[p+4*i]) - want); d > 4e-6*math.Max(r, 1) {
					t.Fatalf("octet %d pair %d: %g, want %g (float64)", octet, p, got[p+4*i], want)
				}
			}
		}
	}
}

// TestSecureUniformEnds pins the uniform's ends and its two branches' seam.
func TestSecureUniformEnds(t *testing.T) {
	ones := ^uint32(0)
	for _, c := range []struct {
		w0, w1, w2 uint32
		want       float32
	}{
		{0, 0, 0, 0x1p-97},                  // the smallest u: radius sqrt(194 ln 2)
		{1, 0, 0, 1.5 * 0x1p-96},            // exact below 2^24
		{ones, ones, 0, 0x1p-32},            // X = 2^64-1 rounds up to 2^64
		{0, 0, 1, 0x1p-32},                  // X = 2^64: the other branch, the same u
		{ones, ones, ones, 1},               // rounds up to 1: radius -0, as in the default scheme
		{0, 1, 1<<31 | 1<<7, 0x1.000002p-1}, // hi = 2^63 + 2^39 + 1: above the tie, rounded up
	} {
		if got := secureUniform(c.w0, c.w1, c.w2); got != c.want {
			t.Errorf("secureUniform(%#x, %#x, %#x) = %g, want %g", c.w0, c.w1, c.w2, got, c.want)
		}
	}
}

// TestKeyPrintsNoSecret: no fmt verb writes a key's words, alone or in a struct.
func TestKeyPrintsNoSecret(t *testing.T) {
	key := Key{0x1111111111111111, 0x2222222222222222, 0x3333333333333333, 0x4444444444444444}
	s := Stream{Mode: Secure, Key: key}
	for _, out := range []string{fmt.Sprint(key), fmt.Sprintf("%v %+v %#v %s", s, s, s, key), fmt.Sprintf("%x %d", key, key)} {
		for _, w := range key {
			if strings.Contains(out, strconv.FormatUint(w, 16)) || strings.Contains(out, strconv.FormatUint(w, 10)) {
				t.Errorf("a key's word shows in %q", out)
			}
		}
	}
}
