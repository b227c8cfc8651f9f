// Package floatbits is fibergen's central check: whether two float32
// results are the same, bit for bit, with one rule for NaNs, which every
// differential test uses (tests, ir/interp, runtime, cmd/fibergen).
//
// The rule. Two values are the same when their bits are equal, or when both
// are NaN and one of them is CanonicalNaN. Every other pair differs: -0 and
// +0, two NaNs of different payloads neither of which is canonical.
//
// Why. The targets agree on every bit of every number, signed zeros and
// infinities included (DESIGN.md §5); they disagree only on which NaN an
// operation returns, and only in one way:
//
//   - A CPU (the Go reference, the interpreter, the LLVM host kernel) gives
//     its default NaN for an invalid operation (x86 0xffc00000, arm64
//     0x7fc00000) and passes an operand's NaN on, quieted. The Go reference
//     and the host kernel on one CPU give the same bits.
//   - The PTX kernels' float32 arithmetic (add, sub, mul, div, sqrt, cvt to
//     f32) returns the canonical NaN 0x7fffffff for every NaN result,
//     whatever its operands' payloads: the PTX ISA's rule, which the PTX
//     simulator implements and the GPU check (tests/gpu_test.go) holds a
//     GPU to.
//   - Moves, loads, stores, selp and the sign-bit and/or that abs and neg
//     compile to carry a NaN's bits unchanged on every target.
//
// So a NaN that the GPU's arithmetic made is 0x7fffffff and matches whatever
// NaN the CPU made for the same value, and a NaN that no arithmetic touched
// has the same bits everywhere and must match exactly. A CPU never makes
// 0x7fffffff from finite operands, so between two CPU targets the rule is
// bit for bit. What the rule cannot see — a kernel that is wrong by
// making NaNs where the reference makes NaNs too — TooManyNaNs catches: a
// differential case whose outputs are mostly NaN tests little.
package floatbits

import (
	"fmt"
	"math"
)

// CanonicalNaN is the NaN that an NVIDIA GPU's float32 arithmetic returns.
const CanonicalNaN = 0x7fffffff

// Same reports whether x and y are the same result: the same bits, or both
// NaN with one of them CanonicalNaN.
func Same(x, y float32) bool {
	bx, by := math.Float32bits(x), math.Float32bits(y)
	return bx == by || x != x && y != y && (bx == CanonicalNaN || by == CanonicalNaN)
}

// FirstDiff returns the first index where a and b are not Same, or -1 when
// they are the same everywhere; slices of different lengths differ at the
// shorter one's length.
func FirstDiff(a, b []float32) int {
	for i := range min(len(a), len(b)) {
		if !Same(a[i], b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// Equal reports whether a and b have the same length and are Same at every
// index.
func Equal(a, b []float32) bool { return FirstDiff(a, b) < 0 }

// Diff describes where got first differs from want, with both values' bits
// and the largest difference in ULPs; "" when they are Equal.
func Diff(want, got []float32) string {
	i := FirstDiff(want, got)
	switch {
	case i < 0:
		return ""
	case len(want) != len(got):
		return fmt.Sprintf("%d values, want %d", len(got), len(want))
	}
	return fmt.Sprintf("[%d] = %v (%#08x), want %v (%#08x); max %d ulp",
		i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), MaxULP(want, got))
}

// MaxULP is the largest distance between a[i] and b[i] in units in the last
// place: adjacent float32s are 1 apart, +0 and -0 are 1 apart, NaNs count by
// their bits; slices of different lengths are math.MaxUint64 apart.
func MaxULP(a, b []float32) uint64 {
	if len(a) != len(b) {
		return math.MaxUint64
	}
	var worst uint64
	for i := range a {
		d := orderedBits(a[i]) - orderedBits(b[i])
		worst = max(worst, uint64(max(d, -d)))
	}
	return worst
}

// orderedBits maps float32 bits to integers in the order of the floats.
func orderedBits(x float32) int64 {
	b := math.Float32bits(x)
	if b&(1<<31) != 0 {
		return -int64(b&^(1<<31)) - 1
	}
	return int64(b)
}

// MaxNaNShare is the share of NaNs above which TooManyNaNs refuses an
// output: a differential case whose outputs are NaN tests nothing there.
const MaxNaNShare = 0.01

// NaNs counts the NaNs in x.
func NaNs(x []float32) int {
	n := 0
	for _, v := range x {
		if v != v {
			n++
		}
	}
	return n
}

// TooManyNaNs returns an error when more than MaxNaNShare of x, beyond the
// allowed NaNs that a case plants on purpose, are NaN.
func TooManyNaNs(x []float32, allowed int) error {
	if n := NaNs(x); float64(n-allowed) > MaxNaNShare*float64(len(x)) {
		return fmt.Errorf("%d of %d values are NaN (%d planted): more than %g of them, so the comparison tests too little there", n, len(x), allowed, MaxNaNShare)
	}
	return nil
}
