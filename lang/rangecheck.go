package lang

// InRange reports whether x lies between lo and hi, lo included unless
// loOpen and hi included unless hiOpen: a hyper's range check, which
// Interval.Contains makes and fibergen splices into every generated package
// (codegen/gogen), so that the compiler and the generated Set and Validate
// run this very text.
func InRange(x, lo, hi float64, loOpen, hiOpen bool) bool {
	inLo := x > lo || !loOpen && x == lo
	inHi := x < hi || !hiOpen && x == hi
	return inLo && inHi
}
