package ir

import (
	"math"

	"github.com/fibergen/fibergen/dsl"
)

// Eval64 computes a uniform operation. The generated Go code, the
// interpreter and constant folding all compute exactly this.
func Eval64(op Op, a, b float64) float64 {
	switch op {
	case OpNeg:
		return -a
	case OpAdd:
		return a + b
	case OpSub:
		return a - b
	case OpMul:
		return a * b
	case OpDiv:
		return a / b
	case OpPow:
		return math.Pow(a, b)
	case OpSqrt:
		return math.Sqrt(a)
	case OpAbs:
		return math.Abs(a)
	case OpMin:
		return dsl.Min(a, b)
	case OpMax:
		return dsl.Max(a, b)
	case OpEq:
		return eq(a, b)
	}
	return math.NaN()
}

// Eval32 computes a varying operation in IEEE float32 arithmetic: every
// result is rounded to float32, sqrt is correctly rounded.
func Eval32(op Op, a, b float32) float32 {
	switch op {
	case OpNeg:
		return -a
	case OpAdd:
		return float32(a + b)
	case OpSub:
		return float32(a - b)
	case OpMul:
		return float32(a * b)
	case OpDiv:
		return float32(a / b)
	case OpSqrt:
		return float32(math.Sqrt(float64(a)))
	case OpAbs:
		return math.Float32frombits(math.Float32bits(a) &^ (1 << 31))
	case OpMin:
		return dsl.Min(a, b)
	case OpMax:
		return dsl.Max(a, b)
	case OpEq:
		return eq(a, b)
	}
	return float32(math.NaN())
}

// Arity returns the number of operands of an arithmetic op.
func (o Op) Arity() int {
	switch o {
	case OpNeg, OpSqrt, OpAbs, OpF32, OpAttenT, OpStore:
		return 1
	case OpAdd, OpSub, OpMul, OpDiv, OpPow, OpMin, OpMax, OpEq:
		return 2
	}
	return 0
}

// eq is OpEq: 1 where a and b compare equal (IEEE), else 0.
func eq[T ~float32 | ~float64](a, b T) T {
	if a == b {
		return 1
	}
	return 0
}
