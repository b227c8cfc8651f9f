package dsl

import "math"

// Fold computes a binary operation on float64 constants with the semantics
// fibergen gives it on every target.
func Fold(op Token, a, b float64) float64 {
	switch op {
	case ADD:
		return a + b
	case SUB:
		return a - b
	case MUL:
		return a * b
	case QUO:
		return a / b
	case POW:
		return math.Pow(a, b)
	}
	return math.NaN()
}

// FoldCall computes a built-in function on float64 constants.
func FoldCall(name string, args []float64) float64 {
	switch name {
	case "sqrt":
		return math.Sqrt(args[0])
	case "abs":
		return math.Abs(args[0])
	case "min":
		return Min(args[0], args[1])
	case "max":
		return Max(args[0], args[1])
	}
	return math.NaN()
}

// Max is the DSL's max: NaN if either operand is NaN, else the larger one,
// and b when they compare equal (so max(-0, 0) is 0 and max(0, -0) is -0).
// Every target implements exactly this selection.
func Max[T ~float32 | ~float64](a, b T) T {
	if a != a {
		return a
	}
	if b != b || b >= a {
		return b
	}
	return a
}

// Min is the DSL's min, the mirror image of Max.
func Min[T ~float32 | ~float64](a, b T) T {
	if a != a {
		return a
	}
	if b != b || b <= a {
		return b
	}
	return a
}
