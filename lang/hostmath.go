package lang

import (
	"math"
	"math/big"
	"sync"
)

// The DSL's exp, log, sin and cos, which only per-step uniform values have:
// the host computes them in float64 once per step. Go's math package does
// not pin their bits (math.Exp and math.Log are assembly on amd64 and
// arm64, each its own algorithm, and Go may fuse a*b + c into one FMA on
// some architectures), so these are fibergen's own, in plain Go, with
// every product converted explicitly (float64(a*b)), which forbids that
// fusion: the same bits on every machine. They follow fdlibm (exp, log) and
// Cephes (sin, cos), within about 1 ulp of the exact result. fibergen
// splices this file into every generated package that needs them
// (codegen/gogen), so the generated code and the runtime run this text.

// HostExp is e**x: +Inf above 709.78, 0 below -745.13, NaN for NaN.
func HostExp(x float64) float64 {
	const (
		ln2Hi     = 6.93147180369123816490e-01
		ln2Lo     = 1.90821492927058770002e-10
		log2e     = 1.44269504088896338700e+00
		overflow  = 7.09782712893383973096e+02
		underflow = -7.45133219101941108420e+02
	)
	switch {
	case x != x:
		return x
	case x > overflow:
		return math.Inf(1)
	case x < underflow:
		return 0
	case -0x1p-28 < x && x < 0x1p-28:
		return 1 + x
	}
	k := int(float64(log2e*x) + math.Copysign(0.5, x)) // x/ln 2 rounded
	hi := x - float64(float64(k)*ln2Hi)
	lo := float64(float64(k) * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	c := r - float64(t*horner(t, 1.66666666666666657415e-01, -2.77777777770155933842e-03,
		6.61375632143793436117e-05, -1.65339022054652515390e-06, 4.13813679705723846039e-08))
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return scale2(y, k)
}

// HostLog is the natural logarithm: -Inf at ±0, NaN below 0 and for NaN.
func HostLog(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
	)
	switch {
	case x != x || x > math.MaxFloat64:
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	m, e := math.Frexp(x) // exact: x = m·2**e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m, e = m*2, e-1
	}
	f, k := m-1, float64(e)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	r := float64(s2*horner(s4, 6.666666666666735130e-01, 2.857142874366239149e-01,
		1.818357216161805012e-01, 1.479819860511658591e-01)) +
		float64(s4*horner(s4, 3.999999999940941908e-01, 2.222219843214978396e-01, 1.531383769920937332e-01))
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}

// HostSin is the sine of x radians: ±0 at ±0, NaN for ±Inf and NaN.
func HostSin(x float64) float64 {
	if x == 0 || x != x {
		return x
	}
	j, z := octant(math.Abs(x))
	if x < 0 {
		j += 4 // sin(-x) = sin(x + π)
	}
	return sinCos(j, z)
}

// HostCos is the cosine of x radians: NaN for ±Inf and NaN.
func HostCos(x float64) float64 {
	if x != x {
		return x
	}
	j, z := octant(math.Abs(x))
	return sinCos(j+2, z) // cos(x) = sin(x + π/2)
}

// sinCos is sin(j·π/4 + z) for an even j and |z| <= π/4.
func sinCos(j uint64, z float64) float64 {
	zz := float64(z * z)
	var y float64
	if j&2 == 0 {
		y = z + float64(float64(z*zz)*horner(zz, -1.66666666666666307295e-1, 8.33333333332211858878e-3,
			-1.98412698295895385996e-4, 2.75573136213857245213e-6, -2.50507477628578072866e-8, 1.58962301576546568060e-10))
	} else {
		y = 1 - float64(0.5*zz) + float64(float64(zz*zz)*horner(zz, 4.16666666666665929218e-2, -1.38888888888730564116e-3,
			2.48015872888517045348e-5, -2.75573141792967388112e-7, 2.08757008419747316778e-9, -1.13585365213876817300e-11))
	}
	if j&4 != 0 {
		return -y
	}
	return y
}

// octant returns an even j (mod 8) and z in [-π/4, π/4] with x = j·π/4 + z
// for x >= 0 (NaN for +Inf): below 2**29 with π/4 in three parts, whose
// products with j are exact (Cody and Waite); above, with π to as many
// bits as x needs (exactReduce).
func octant(x float64) (uint64, float64) {
	const (
		pi4a = 7.85398125648498535156e-1 // π/4 in three parts
		pi4b = 3.77489470793079817668e-8
		pi4c = 2.69515142907905952645e-15
	)
	if x > math.MaxFloat64 {
		return 0, math.NaN()
	}
	if x >= 1<<29 {
		return exactReduce(x)
	}
	j := uint64(float64(x * (4 / math.Pi)))
	j += j & 1
	y := float64(j)
	z := ((x - float64(y*pi4a)) - float64(y*pi4b)) - float64(y*pi4c)
	return j & 7, z
}

// exactReduce is octant for a large x: j·π/4 nearest x with j even, and
// the rest, from x·4/π computed with 256 bits past x's integer part.
func exactReduce(x float64) (uint64, float64) {
	_, e := math.Frexp(x)
	prec := uint(e) + 256
	q := new(big.Float).SetPrec(prec).SetFloat64(x)
	q.Mul(q, new(big.Float).SetPrec(prec).Quo(big.NewFloat(4).SetPrec(prec), piTo(prec)))
	n, _ := q.Int(nil) // floor: q > 0
	if n.Bit(0) == 1 {
		n.Add(n, big.NewInt(1))
	}
	frac := q.Sub(q, new(big.Float).SetPrec(prec).SetInt(n))
	z, _ := frac.Mul(frac, new(big.Float).SetPrec(prec).Quo(piTo(prec), big.NewFloat(4).SetPrec(prec))).Float64()
	return new(big.Int).And(n, big.NewInt(7)).Uint64(), z
}

// piTo returns π to prec bits (at most piBits), computed once by Machin's
// formula π = 16·atan(1/5) − 4·atan(1/239).
func piTo(prec uint) *big.Float {
	piOnce.Do(func() {
		p := new(big.Float).SetPrec(piBits+64).Mul(big.NewFloat(16), atanInv(5, piBits+64))
		pi = p.Sub(p, new(big.Float).SetPrec(piBits+64).Mul(big.NewFloat(4), atanInv(239, piBits+64)))
	})
	return new(big.Float).SetPrec(prec).Set(pi)
}

// piBits is enough for any finite float64 (2**1024) and 256 bits past it.
const piBits = 1024 + 256

var (
	piOnce sync.Once
	pi     *big.Float
)

// atanInv is atan(1/n) = Σ (-1)**k / ((2k+1)·n**(2k+1)) to prec bits.
func atanInv(n int64, prec uint) *big.Float {
	sum := new(big.Float).SetPrec(prec)
	pow := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1), big.NewFloat(float64(n))) // 1/n**(2k+1)
	nn := big.NewFloat(float64(n * n))
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -int(prec))
	for k := int64(0); pow.Cmp(eps) > 0; k++ {
		term := new(big.Float).SetPrec(prec).Quo(pow, big.NewFloat(float64(2*k+1)))
		if k%2 == 1 {
			term.Neg(term)
		}
		sum.Add(sum, term)
		pow.Quo(pow, nn)
	}
	return sum
}

// horner is c[0] + t·(c[1] + t·(… + t·c[n-1])), each product rounded.
func horner(t float64, c ...float64) float64 {
	p := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		p = c[i] + float64(t*p)
	}
	return p
}

// scale2 is y·2**k, rounded once: exact unless the result is subnormal or
// overflows (|k| <= 1100).
func scale2(y float64, k int) float64 {
	pow2 := func(e int) float64 { return math.Float64frombits(uint64(e+1023) << 52) }
	switch {
	case k < -1022:
		return float64(y*pow2(k+64)) * 0x1p-64
	case k > 1023:
		return float64(y*pow2(k-64)) * 0x1p64
	}
	return float64(y * pow2(k))
}
