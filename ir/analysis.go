package ir

import "github.com/fibergen/fibergen/lang"

// HostScalars returns the uniform values the kernel part of b reads: the
// per-step scalars the host computes and passes as kernel parameters.
// Constants are not among them; the kernel holds them as immediates.
func HostScalars(b *Block) []*Value {
	used := map[*Value]bool{}
	for _, v := range b.Values {
		if v.OnHost() {
			continue
		}
		for _, a := range v.Args {
			if a.Uniform && !a.IsConst() {
				used[a] = true
			}
		}
	}
	var out []*Value
	for _, v := range b.Values {
		if used[v] {
			out = append(out, v)
		}
	}
	return out
}

// DependsOnStep reports whether a uniform value changes from step to step:
// whether it reads t or sigma_w2 rather than hypers and constants only.
func DependsOnStep(v *Value) bool { return dependsOnStep(v, map[*Value]bool{}) }

// dependsOnStep visits each value once: seen holds the values already found
// not to depend on the step, so shared operands cost nothing the second time.
func dependsOnStep(v *Value, seen map[*Value]bool) bool {
	if v.Op == OpStepIndex || v.Op == OpSigmaW2 || v.Op == OpScalar || v.Op.IsReduce() || v.Op == OpNumel ||
		v.IsLine() || v.Op.CountAxis() != lang.Coords {
		return true
	}
	if seen[v] {
		return false
	}
	seen[v] = true
	for _, a := range v.Args {
		if dependsOnStep(a, seen) {
			return true
		}
	}
	return false
}

// IsFirstStep reports whether the uniform value v is 1 at step 0 and 0 at
// every later step: a comparison of t with a constant that only t = 0
// passes (t == 0, t < 1, t <= 0.5, 1 > t, …), converted to float32 or not.
// A select on it starts a state from another value (docs/dsl.md, "Initial
// values from theta and g"), which the noise analysis sees through.
func IsFirstStep(v *Value) bool {
	if v.Op == OpF32 {
		v = v.Args[0]
	}
	if len(v.Args) != 2 {
		return false
	}
	x, y, op := v.Args[0], v.Args[1], v.Op
	if y.Op == OpStepIndex { // c op t: t mirror(op) c
		x, y = y, x
		op = map[Op]Op{OpLt: OpGt, OpLe: OpGe, OpGt: OpLt, OpGe: OpLe, OpEq: OpEq}[op]
	}
	if x.Op != OpStepIndex || !y.IsConst() {
		return false
	}
	c := y.Const
	switch op {
	case OpEq:
		return c == 0
	case OpLt:
		return c > 0 && c <= 1
	case OpLe:
		return c >= 0 && c < 1
	}
	return false
}

// StartOf returns the value a state declared with a start (`state m = g`)
// takes at step 0 — the second operand of the select on the first step
// that lowering names after the state, through which the step reads it —
// or nil for a state that starts from its buffer. A select written in the
// step is no declaration, whatever it selects.
func StartOf(f *Func, state string) *Value {
	for _, v := range f.Step.Values {
		if v.Op == OpSelect && v.Name == state {
			return v.Args[1]
		}
	}
	return nil
}

// Buffer is one array of the kernels, in ABI order (Buffers).
type Buffer struct {
	Name      string
	Storage   Storage // how it keeps its float32 values
	ReadOnly  bool    // the step never writes it: g, and a state it never stores
	WriteOnly bool    // the step never reads it: the look-ahead point
}

// Buffers lists the arrays a step reads and writes, in the kernels' ABI
// order: theta, g, then the states in declaration order.
func Buffers(f *Func) []Buffer {
	stored, loaded := map[string]bool{}, map[string]bool{}
	for _, v := range f.Step.Values {
		stored[v.Name] = stored[v.Name] || v.Op == OpStore
		loaded[v.Name] = loaded[v.Name] || v.Op == OpLoad
	}
	var out []Buffer
	for _, name := range append([]string{ThetaName, GradName}, f.States...) {
		out = append(out, Buffer{Name: name, Storage: f.StorageOf(name), ReadOnly: !stored[name], WriteOnly: !loaded[name]})
	}
	return out
}
