package ir

import (
	"math"

	"github.com/fibergen/fibergen/lang"
)

// lang is o as an operation of the language; 0 for the IR's own operations.
func (o Op) lang() lang.Op {
	if l := lang.Op(o); l.Valid() {
		return l
	}
	return 0
}

// Lang is o as an operation of the language; 0 for the IR's own operations.
func (o Op) Lang() lang.Op { return o.lang() }

// OpOf is the IR's operation for the language's operation l.
func OpOf(l lang.Op) Op {
	if !l.Valid() {
		return OpInvalid
	}
	return Op(l)
}

// Eval64 computes a uniform operation (lang.Eval64). The generated Go code,
// the interpreter and constant folding all compute exactly this.
func Eval64(op Op, a, b float64) float64 {
	if op.lang() == 0 {
		return math.NaN()
	}
	return lang.Eval64(op.lang(), a, b)
}

// Eval32 computes a varying operation in IEEE float32 arithmetic
// (lang.Eval32).
func Eval32(op Op, a, b float32) float32 {
	if op.lang() == 0 {
		return float32(math.NaN())
	}
	return lang.Eval32(op.lang(), a, b)
}

// Arity returns the number of operands of an arithmetic op.
func (o Op) Arity() int {
	switch o {
	case OpF32, OpAttenT, OpStore, OpLinesSum, OpLinesMax, OpLinesMin:
		return 1
	case OpPrivatize:
		return 2
	}
	if o.lang() == 0 {
		return 0
	}
	return o.lang().Arity()
}

// EvalUniform computes a uniform value of hypers, t and constants at hypers
// h and step t (NaN for a value that must not depend on the step).
func (fn *Func) EvalUniform(v *Value, h []float64, t float64) float64 {
	switch v.Op {
	case OpConst:
		return v.Const
	case OpHyper:
		return h[fn.HyperIndex(v.Name)]
	case OpStepIndex:
		return t
	case OpF32:
		return float64(float32(fn.EvalUniform(v.Args[0], h, t)))
	}
	if v.Op.Arity() == 0 {
		return math.NaN()
	}
	var args [3]float64 // select's three operands at most
	for i, a := range v.Args {
		args[i] = fn.EvalUniform(a, h, t)
	}
	return lang.EvalN(v.Op.lang(), args[:len(v.Args)]...)
}
