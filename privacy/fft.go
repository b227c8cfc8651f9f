package privacy

import (
	"math"
	"math/bits"
	"slices"
)

// Linear convolution of nonnegative sequences, directly when one is
// short and by a radix-2 FFT otherwise.

// directLimit is the length of the shorter sequence up to which convolve
// sums the products directly.
const directLimit = 64

// convolve returns the linear convolution of a and b, of length
// len(a)+len(b)-1. An FFT's rounding error is about 1e-16 of the largest
// products, spread over every output entry, so a PLD's far tails, whose
// exact masses are far smaller, would come out as noise. Each sequence is
// therefore split into its big span (from its first to its last entry
// of at least bigShare of its largest) and the small rest: big × big is
// one transform whose noise stays inside the two spans' sum, and the
// products with a small part, transformed on their own, carry noise on
// the scale of the small entries. This matters where one step's PLD has
// a long thin tail (a small sample rate at a small σ: a run at q = 1e-3,
// σ = 0.5, 10⁵ steps took 12 s without it, 1.3 s with it).
func convolve(a, b []float64) []float64 {
	i0, aBig, aSmall := splitBig(a)
	j0, bBig, bSmall := splitBig(b)
	if aSmall == nil && bSmall == nil {
		return convolvePlain(a, b)
	}
	c := make([]float64, len(a)+len(b)-1)
	addAt(c, i0+j0, convolvePlain(aBig, bBig))
	if bSmall != nil {
		addAt(c, i0, convolvePlain(aBig, bSmall))
	}
	if aSmall != nil {
		addAt(c, 0, convolvePlain(aSmall, b))
	}
	return c
}

// bigShare is the least share of a sequence's largest entry that splitBig
// counts as big.
const bigShare = 1e-6

// splitBig returns the span of x from its first to its last entry of at
// least bigShare·max(x), its offset, and x with that span zeroed; or all
// of x and nil if the span is more than half of x: then the small tails
// are short, the products with them cost two more transforms of x's
// size, and their noise does not stop the tail cuts.
func splitBig(x []float64) (int, []float64, []float64) {
	top := 0.0
	for _, v := range x {
		top = max(top, v)
	}
	i0, i1 := 0, len(x)-1
	for i0 < i1 && x[i0] < bigShare*top {
		i0++
	}
	for i1 > i0 && x[i1] < bigShare*top {
		i1--
	}
	if 2*(i1-i0+1) > len(x) {
		return 0, x, nil
	}
	small := slices.Clone(x)
	clear(small[i0 : i1+1])
	return i0, x[i0 : i1+1], small
}

// addAt adds y into c from offset off.
func addAt(c []float64, off int, y []float64) {
	for i, v := range y {
		c[off+i] += v
	}
}

// convolvePlain is one convolution, direct or by one FFT.
func convolvePlain(a, b []float64) []float64 {
	if min(len(a), len(b)) <= directLimit {
		return convolveDirect(a, b)
	}
	return convolveFFT(a, b, 1<<bits.Len(uint(len(a)+len(b)-2)))
}

func convolveDirect(a, b []float64) []float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	c := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		for j, y := range b {
			c[i+j] += x * y
		}
	}
	return c
}

// convolveFFT transforms a + i·b in one complex FFT of size n, separates
// the two spectra by conjugate symmetry, multiplies them and transforms
// back; negative results, which only rounding makes, become 0 (which
// moves them towards their exact value).
func convolveFFT(a, b []float64, n int) []float64 {
	z := make([]complex128, n)
	for i, x := range a {
		z[i] = complex(x, 0)
	}
	for i, y := range b {
		z[i] += complex(0, y)
	}
	w := twiddles(n)
	fft(z, w)
	prod := make([]complex128, n)
	for k := range n {
		zk, zc := z[k], conj(z[(n-k)&(n-1)])
		// A = (zk + zc)/2, B = (zk - zc)/(2i); A·B = (zk² - zc²)/(4i).
		prod[k] = (zk*zk - zc*zc) * complex(0, -0.25)
	}
	ifft(prod, w)
	c := make([]float64, len(a)+len(b)-1)
	for i := range c {
		c[i] = max(real(prod[i]), 0)
	}
	return c
}

func conj(z complex128) complex128 { return complex(real(z), -imag(z)) }

// twiddles returns e^{-2πik/n} for k < n/2, each from math.Sincos of its
// own angle, so that every factor is correct to about one rounding.
func twiddles(n int) []complex128 {
	w := make([]complex128, n/2)
	for k := range w {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		w[k] = complex(c, s)
	}
	return w
}

// fft transforms z in place (size a power of 2), iterative radix-2
// decimation in time, with the twiddles of size len(z).
func fft(z []complex128, w []complex128) {
	n := len(z)
	shift := bits.UintSize - bits.Len(uint(n-1))
	for i := range n {
		if j := int(bits.Reverse(uint(i)) >> shift); i < j {
			z[i], z[j] = z[j], z[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, stride := size/2, n/size
		for start := 0; start < n; start += size {
			for k := range half {
				t := w[k*stride] * z[start+k+half]
				z[start+k+half] = z[start+k] - t
				z[start+k] += t
			}
		}
	}
}

// ifft inverts fft: conjugate, transform, conjugate and divide by n.
func ifft(z []complex128, w []complex128) {
	for i := range z {
		z[i] = conj(z[i])
	}
	fft(z, w)
	inv := 1 / float64(len(z))
	for i := range z {
		z[i] = complex(real(z[i])*inv, -imag(z[i])*inv)
	}
}
