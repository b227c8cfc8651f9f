package lang

// Interval is a hyper's range, `(lo, hi]` and the like; an infinite bound
// is ±Inf.
type Interval struct {
	LoOpen, HiOpen bool
	Lo, Hi         float64
	LoLit, HiLit   string // as written: "0", "-inf"
}

// Contains reports whether x lies in the interval; a nil interval holds
// every value.
func (r *Interval) Contains(x float64) bool {
	if r == nil {
		return true
	}
	return InRange(x, r.Lo, r.Hi, r.LoOpen, r.HiOpen)
}

// String prints the interval in DSL syntax.
func (r *Interval) String() string {
	open, closing := "[", "]"
	if r.LoOpen {
		open = "("
	}
	if r.HiOpen {
		closing = ")"
	}
	return open + r.LoLit + ", " + r.HiLit + closing
}
