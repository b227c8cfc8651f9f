package lower

import (
	"math"

	"github.com/fibergen/fibergen/lang"
)

// span bounds the values a function of the hypers takes over their
// declared ranges: the interval [lo, hi], an end left out where it is
// open. The limits of time-varying coefficients (steady.go) ask it for
// signs and orders; it may be wider than the truth, never narrower.
type span struct {
	lo, hi         float64
	loOpen, hiOpen bool
}

// anything is the span of a value nothing is known of.
var anything = span{lo: math.Inf(-1), hi: math.Inf(1), loOpen: true, hiOpen: true}

func point(x float64) span { return span{lo: x, hi: x} }

// rangeSpan is the span of a hyper declared in r (nil: any finite value).
func rangeSpan(r *lang.Interval) span {
	if r == nil {
		return anything
	}
	return span{lo: r.Lo, hi: r.Hi, loOpen: r.LoOpen, hiOpen: r.HiOpen}
}

// positive reports whether every value of s is above 0.
func (s span) positive() bool { return s.lo > 0 || s.lo == 0 && s.loOpen }

// negative reports whether every value of s is below 0.
func (s span) negative() bool { return s.hi < 0 || s.hi == 0 && s.hiOpen }

// below reports whether every value of s is below every value of t.
func (s span) below(t span) bool {
	return s.hi < t.lo || s.hi == t.lo && (s.hiOpen || t.loOpen)
}

func (s span) neg() span { return span{lo: -s.hi, hi: -s.lo, loOpen: s.hiOpen, hiOpen: s.loOpen} }

func (s span) add(t span) span {
	return span{lo: s.lo + t.lo, hi: s.hi + t.hi, loOpen: s.loOpen || t.loOpen, hiOpen: s.hiOpen || t.hiOpen}
}

// mul is the span of products, its ends closed (wider, never narrower).
func (s span) mul(t span) span {
	ps := []float64{s.lo * t.lo, s.lo * t.hi, s.hi * t.lo, s.hi * t.hi}
	out := span{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, p := range ps {
		if math.IsNaN(p) { // 0 · ∞: the product may be anything
			return anything
		}
		out.lo, out.hi = min(out.lo, p), max(out.hi, p)
	}
	return out
}

// div is the span of quotients by t, which excludes 0.
func (s span) div(t span) span {
	if !t.positive() && !t.negative() {
		return anything
	}
	return s.mul(span{lo: 1 / t.hi, hi: 1 / t.lo})
}

// monotone maps s through an increasing function f.
func (s span) monotone(f func(float64) float64) span {
	return span{lo: f(s.lo), hi: f(s.hi), loOpen: s.loOpen, hiOpen: s.hiOpen}
}

func (s span) union(t span) span {
	return span{lo: min(s.lo, t.lo), hi: max(s.hi, t.hi)}
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
		return x.monotone(math.Exp)
	case lang.Log:
		if x.lo >= 0 {
			return x.monotone(math.Log)
		}
	case lang.Sqrt:
		if x.lo >= 0 {
			return x.monotone(math.Sqrt)
		}
	case lang.Min:
		return span{lo: min(x.lo, args[1].lo), hi: min(x.hi, args[1].hi)}
	case lang.Max:
		return span{lo: max(x.lo, args[1].lo), hi: max(x.hi, args[1].hi)}
	case lang.Abs:
		return span{lo: 0, hi: max(math.Abs(x.lo), math.Abs(x.hi))}
	case lang.Sin, lang.Cos:
		return span{lo: -1, hi: 1}
	case lang.Select:
		return args[1].union(args[2])
	}
	if op.IsComparison() || op == lang.Sign {
		return span{lo: -1, hi: 1}
	}
	return anything
}
