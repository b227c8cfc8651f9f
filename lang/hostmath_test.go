package lang

import (
	"math"
	"math/rand/v2"
	"testing"
)

// hostMathBits pins the bits of exp, log, sin and cos at a few points, so
// that a change to their code that changes a result fails here: a
// checkpoint's schedule must replay identically on every machine and
// release. The large sin and cos values agree with glibc's correctly
// rounded ones (sin(1e22) = -0.8522008497671888).
var hostMathBits = []struct {
	x                  float64
	exp, log, sin, cos uint64
}{
	{-745, 0x0000000000000001, 0x7ff8000000000001, 0x3fdb683ccbc86662, 0xbfecead5c656161a},
	{-700.25, 0x00caf5fe9a485c8e, 0x7ff8000000000001, 0xbfd4721104077214, 0xbfee52bb4696a584},
	{-20, 0x3e21b48655f37267, 0x7ff8000000000001, 0xbfed36d8f55d3ce0, 0x3fda1e043964a83f},
	{-1, 0x3fd78b56362cef38, 0x7ff8000000000001, 0xbfeaed548f090cee, 0x3fe14a280fb5068c},
	{-0x1p-30, 0x3fefffffff800000, 0x7ff8000000000001, 0xbe10000000000000, 0x3ff0000000000000},
	{0.1, 0x3ff1aec7b35a00d4, 0xc0026bb1bbb55515, 0x3fb98eaecb8bcb2c, 0x3fefd712f9a817c0},
	{0.5, 0x3ffa61298e1e069c, 0xbfe62e42fefa39ef, 0x3fdeaee8744b05f0, 0x3fec1528065b7d50},
	{1, 0x4005bf0a8b145769, 0x0000000000000000, 0x3feaed548f090cee, 0x3fe14a280fb5068c},
	{2.5, 0x40285d6fd931e0bb, 0x3fed5240f0e0e078, 0x3fe326af0dcfcab0, 0xbfe9a2f7ef858b7d},
	{10, 0x40d5829dcf950560, 0x40026bb1bbb55516, 0xbfe1689ef5f34f53, 0xbfead9ac890c6b1f},
	{88.7, 0x47ef4705bbffae5c, 0x4011f0e7f7eaaee6, 0x3fe577ea3d0cf63e, 0x3fe7bad92cf0ac2f},
	{709.75, 0x7feef85a11e73f2d, 0x401a42787ff488a0, 0xbfcfa904cfd9a9e4, 0x3fef0173e6554597},
	{1e-310, 0x3ff0000000000000, 0xc0864e69394d9508, 0x000012688b70e62b, 0x3ff0000000000000},
	{math.Pi / 2, 0x40133dedc855935f, 0x3fdce6bb25aa1315, 0x3ff0000000000000, 0x3c91a62633145c00},
	{123456.789, 0x7ff0000000000000, 0x40277281cad8a844, 0xbfeff50e60ab53f9, 0x3faa74d27c41b22a},
	{1e9, 0x7ff0000000000000, 0x4034b927f32bffb8, 0x3fe1778cae83c69b, 0x3feacff8c7364233},
	{1e22, 0x7ff0000000000000, 0x40495414621954fe, 0xbfeb453ab76bf397, 0x3fe0be2cef01c8f4},
	{1e300, 0x7ff0000000000000, 0x4085963447f87fb5, 0xbfea2c16b010e386, 0xbfe2699022adc4c1},
}

func TestHostMathPinned(t *testing.T) {
	for _, c := range hostMathBits {
		for _, f := range []struct {
			name string
			fn   func(float64) float64
			want uint64
		}{{"exp", HostExp, c.exp}, {"log", HostLog, c.log}, {"sin", HostSin, c.sin}, {"cos", HostCos, c.cos}} {
			if got := math.Float64bits(f.fn(c.x)); got != f.want && !(math.IsNaN(f.fn(c.x)) && math.IsNaN(math.Float64frombits(f.want))) {
				t.Errorf("%s(%v) = %#016x, pinned %#016x", f.name, c.x, got, f.want)
			}
		}
	}
}

func TestHostMathSpecial(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name    string
		got, is float64
	}{
		{"exp(+Inf)", HostExp(inf), inf}, {"exp(-Inf)", HostExp(-inf), 0}, {"exp(NaN)", HostExp(nan), nan},
		{"exp(710)", HostExp(710), inf}, {"exp(-746)", HostExp(-746), 0}, {"exp(-0)", HostExp(math.Copysign(0, -1)), 1},
		{"log(+Inf)", HostLog(inf), inf}, {"log(0)", HostLog(0), -inf}, {"log(-0)", HostLog(math.Copysign(0, -1)), -inf},
		{"log(-1)", HostLog(-1), nan}, {"log(NaN)", HostLog(nan), nan}, {"log(min subnormal)", HostLog(5e-324), -744.4400719213812},
		{"sin(+Inf)", HostSin(inf), nan}, {"sin(NaN)", HostSin(nan), nan}, {"sin(-0)", HostSin(math.Copysign(0, -1)), math.Copysign(0, -1)},
		{"cos(-Inf)", HostCos(-inf), nan}, {"cos(NaN)", HostCos(nan), nan}, {"cos(0)", HostCos(0), 1},
		{"sin(-max)", HostSin(-math.MaxFloat64), -HostSin(math.MaxFloat64)}, {"cos(-max)", HostCos(-math.MaxFloat64), HostCos(math.MaxFloat64)},
	} {
		if math.Float64bits(c.got) != math.Float64bits(c.is) && !(math.IsNaN(c.got) && math.IsNaN(c.is)) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.is)
		}
	}
}

// TestHostMathAccurate holds exp, log, sin and cos within 2 ulps of Go's
// math package (each within 1 ulp of the exact value, on either side) on
// random arguments where math is accurate (its amd64 Exp overflows early and
// its Log flushes subnormals; its sin and cos reduce large arguments with
// 64 bits of π only), and sin² + cos² within 4 ulps
// of 1 everywhere (1 ulp of error in each, doubled by squaring, plus the
// rounding of the squares and the sum).
func TestHostMathAccurate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100000 {
		x := (r.Float64()*2 - 1) * math.Pow(10, float64(i%9-4)) // ±1e-4 … ±1e4
		if math.Abs(x) < 700 {
			within(t, "exp", x, HostExp(x), math.Exp(x), 2)
		}
		within(t, "log", math.Abs(x), HostLog(math.Abs(x)), math.Log(math.Abs(x)), 2)
		within(t, "sin", x, HostSin(x), math.Sin(x), 2)
		within(t, "cos", x, HostCos(x), math.Cos(x), 2)
		y := math.Float64frombits(r.Uint64()&^(0x7ff<<52|1<<63) | uint64(1+r.IntN(2046))<<52) // any normal
		within(t, "log", y, HostLog(y), math.Log(y), 2)
		s, c := HostSin(y), HostCos(y)
		within(t, "sin²+cos²", y, s*s+c*c, 1, 4)
	}
}

func within(t *testing.T, name string, x, got, want float64, ulps int64) {
	t.Helper()
	d := int64(math.Float64bits(got)) - int64(math.Float64bits(want))
	if d < -ulps || d > ulps || math.Signbit(got) != math.Signbit(want) {
		t.Fatalf("%s(%v) = %v, want %v within %d ulp", name, x, got, want, ulps)
	}
}
