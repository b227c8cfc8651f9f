package lower

import (
	"math"

	"github.com/fibergen/fibergen/lang"
)

// span bounds the float64 values a function of the hypers takes over
// their declared ranges, as the host computes it: the interval [lo, hi],
// an end left out where it is open, and nan where the value may be NaN.
// An end at ±Inf that is open bounds nothing but excludes ±Inf; a closed
// one admits it. The limits of time-varying coefficients (steady.go) ask
// it for signs and orders; it may be wider than the truth, never
// narrower. Rounding is monotone, so ends computed in float64 bound the
// values computed in float64; an open end survives only where rounding
// cannot reach it (a sum of floats is 0 only where they cancel exactly).
type span struct {
	lo, hi         float64
	loOpen, hiOpen bool
	nan            bool
}

// anything is the span of a finite value nothing else is known of.
var anything = span{lo: math.Inf(-1), hi: math.Inf(1), loOpen: true, hiOpen: true}

// unknown is the span of a value that may be anything, ±Inf and NaN
// included.
var unknown = span{lo: math.Inf(-1), hi: math.Inf(1), nan: true}

func point(x float64) span {
	if math.IsNaN(x) {
		return unknown
	}
	return span{lo: x, hi: x}
}

// rangeSpan is the span of a hyper declared in r (nil: any finite value).
func rangeSpan(r *lang.Interval) span {
	if r == nil {
		return anything
	}
	return span{lo: r.Lo, hi: r.Hi, loOpen: r.LoOpen || math.IsInf(r.Lo, 0), hiOpen: r.HiOpen || math.IsInf(r.Hi, 0)}
}

// positive reports whether every value of s is above 0.
func (s span) positive() bool { return !s.nan && (s.lo > 0 || s.lo == 0 && s.loOpen) }

// negative reports whether every value of s is below 0.
func (s span) negative() bool { return !s.nan && (s.hi < 0 || s.hi == 0 && s.hiOpen) }

// finite reports whether every value of s is a finite number.
func (s span) finite() bool {
	return !s.nan && (s.lo > math.Inf(-1) || s.loOpen) && (s.hi < math.Inf(1) || s.hiOpen)
}

// below reports whether every value of s is below every value of t.
func (s span) below(t span) bool {
	return !s.nan && !t.nan && (s.hi < t.lo || s.hi == t.lo && (s.hiOpen || t.loOpen))
}

func (s span) neg() span {
	return span{lo: -s.hi, hi: -s.lo, loOpen: s.hiOpen, hiOpen: s.loOpen, nan: s.nan}
}

// closed is s with its finite ends closed (rounding may reach them), and
// its infinite ones open only where finite operands cannot overflow to
// them: never, after an operation that can overflow.
func (s span) closed() span {
	return span{lo: s.lo, hi: s.hi, nan: s.nan || math.IsNaN(s.lo) || math.IsNaN(s.hi)}
}

func (s span) add(t span) span {
	out := span{lo: s.lo + t.lo, hi: s.hi + t.hi}.closed()
	// x + y is 0 only where y = −x exactly, and a sum above 0 rounds above 0.
	out.loOpen = out.lo == 0 && (s.loOpen || t.loOpen)
	out.hiOpen = out.hi == 0 && (s.hiOpen || t.hiOpen)
	out.nan = out.nan || s.nan || t.nan
	return out
}

// mul is the span of products: its ends closed, and unknown where a
// product may be 0 · ∞.
func (s span) mul(t span) span {
	if s.nan || t.nan {
		return unknown
	}
	out := span{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, p := range []float64{s.lo * t.lo, s.lo * t.hi, s.hi * t.lo, s.hi * t.hi} {
		if math.IsNaN(p) {
			return unknown
		}
		out.lo, out.hi = min(out.lo, p), max(out.hi, p)
	}
	return out
}

// div is the span of quotients: unknown unless t excludes 0.
func (s span) div(t span) span {
	switch {
	case t.positive():
		hi := math.Inf(1) // 1/x overflows for x near 0
		if t.lo != 0 {
			hi = 1 / t.lo
		}
		return s.mul(span{lo: 1 / t.hi, hi: hi})
	case t.negative():
		lo := math.Inf(-1)
		if t.hi != 0 {
			lo = 1 / t.hi
		}
		return s.mul(span{lo: lo, hi: 1 / t.lo})
	}
	return unknown
}

// monotone maps s through an increasing function f. sqrtLike says that
// f neither overflows nor rounds a value above 0 to f(0) (log, sqrt), so
// an open end at 0 or at +Inf stays open.
func (s span) monotone(f func(float64) float64, sqrtLike bool) span {
	out := span{lo: f(s.lo), hi: f(s.hi), nan: s.nan}.closed()
	out.loOpen = sqrtLike && s.lo == 0 && s.loOpen
	out.hiOpen = sqrtLike && math.IsInf(s.hi, 1) && s.hiOpen
	return out
}

// extreme is the span of min (or max) of values of s and t.
func (s span) extreme(t span, maximum bool) span {
	if maximum {
		return s.ends(t, max(s.lo, t.lo), max(s.hi, t.hi))
	}
	return s.ends(t, min(s.lo, t.lo), min(s.hi, t.hi))
}

func (s span) union(t span) span { return s.ends(t, min(s.lo, t.lo), max(s.hi, t.hi)) }

// ends is the span [lo, hi] of values chosen from s and t (min, max,
// select: no rounding), each end open where every operand end it comes
// from is.
func (s span) ends(t span, lo, hi float64) span {
	from := func(v, a float64, open bool) bool { return a != v || open }
	return span{lo: lo, hi: hi, nan: s.nan || t.nan,
		loOpen: from(lo, s.lo, s.loOpen) && from(lo, t.lo, t.loOpen),
		hiOpen: from(hi, s.hi, s.hiOpen) && from(hi, t.hi, t.hiOpen)}
}

// spanOf is the span of op over its operands' spans.
func spanOf(op lang.Op, args []span) span {
	x := args[0]
	switch op {
	case lang.Neg:
		return x.neg()
	case lang.Add:
		return x.add(args[1])
	case lang.Sub:
		return x.add(args[1].neg())
	case lang.Mul:
		return x.mul(args[1])
	case lang.Div:
		return x.div(args[1])
	case lang.Exp:
		return x.monotone(math.Exp, false)
	case lang.Log:
		if x.lo >= 0 {
			return x.monotone(math.Log, true)
		}
	case lang.Sqrt:
		if x.lo >= 0 {
			return x.monotone(math.Sqrt, true)
		}
	case lang.Min, lang.Max:
		return x.extreme(args[1], op == lang.Max)
	case lang.Abs:
		return x.union(x.neg()).extreme(point(0), true)
	case lang.Sin, lang.Cos:
		return span{lo: -1, hi: 1, nan: !x.finite()}
	case lang.Select:
		return args[1].union(args[2])
	}
	if op.IsComparison() {
		return span{lo: 0, hi: 1}
	}
	if op == lang.Sign {
		return span{lo: -1, hi: 1, nan: x.nan}
	}
	return unknown
}
