package ir

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/lang"
)

// handFunc builds a valid function by hand: one hyper lr, one state m and
// an observation with one argument a; break edits it before Verify.
type handFunc struct {
	fn                *Func
	lr, g, m, lr32, x *Value // step values
}

func newHandFunc() *handFunc {
	fn := &Func{
		Name:    "p",
		Hypers:  []Hyper{{Name: "lr", Default: 0.1}},
		States:  []string{"m"},
		Observe: &Observation{Kind: "two_point", Args: []string{"a"}},
		Init:    &Block{Name: "init", Kind: InitBlock},
		ObsArgs: &Block{Name: "observe", Kind: ObserveBlock},
		Step:    &Block{Name: "step", Kind: StepBlock},
	}
	zero := fn.Init.NewValue(OpConst, F32, true)
	store(fn.Init, "m", zero)
	one := fn.ObsArgs.NewValue(OpConst, F64, true)
	one.Const = 1
	store(fn.ObsArgs, "a", one)

	h := &handFunc{fn: fn}
	b := fn.Step
	h.lr = b.NewValue(OpHyper, F64, true)
	h.lr.Name = "lr"
	h.lr32 = b.NewValue(OpF32, F32, true, h.lr)
	h.g = load(b, "g")
	h.m = load(b, "m")
	h.x = b.NewValue(OpMul, F32, false, h.lr32, h.g)
	store(b, "m", h.x)
	store(b, "theta", b.NewValue(OpSub, F32, false, h.m, h.x))
	return h
}

func load(b *Block, name string) *Value {
	v := b.NewValue(OpLoad, F32, false)
	v.Name = name
	return v
}

func store(b *Block, name string, v *Value) *Value {
	s := b.NewValue(OpStore, None, v.Uniform, v)
	s.Name = name
	return s
}

// remove deletes v from b.
func remove(b *Block, v *Value) {
	for i, w := range b.Values {
		if w == v {
			b.Values = append(b.Values[:i], b.Values[i+1:]...)
			return
		}
	}
}

func TestVerifyAcceptsHandBuiltFunc(t *testing.T) {
	if err := Verify(newHandFunc().fn); err != nil {
		t.Fatalf("Verify of the valid hand-built function: %v", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(h *handFunc)
		want   string // substring of the error
	}{
		{"block of another kind in its place", func(h *handFunc) {
			h.fn.Step.Kind = InitBlock
		}, "block step is of kind init, but it is the step block"},
		{"operand defined after use", func(h *handFunc) {
			b := h.fn.Step
			remove(b, h.g)
			b.Values = append(b.Values, h.g)
		}, "operand v2 is not defined before it"},
		{"operand from another block", func(h *handFunc) {
			h.x.Args[1] = h.fn.Init.Values[0]
		}, "not defined before it"},
		{"mixed types", func(h *handFunc) {
			h.x.Args[1], h.x.Uniform = h.lr, true
		}, "mul mixes f32 and f64"},
		{"result type differs from operands", func(h *handFunc) {
			h.x.Type = F64
		}, "mul has type f64, want f32"},
		{"f32 of an f32 value", func(h *handFunc) {
			h.fn.Step.NewValue(OpF32, F32, true, h.lr32)
		}, "f32 of a f32 value"},
		{"pow on f32", func(h *handFunc) {
			h.x.Op = OpPow
		}, "pow on f32"},
		{"storage of g", func(h *handFunc) {
			h.fn.Storage = map[string]Storage{GradName: {DType: lang.BFloat16}}
		}, "storage of g, which is neither theta nor a state"},
		{"unknown storage type", func(h *handFunc) {
			h.fn.Storage = map[string]Storage{"m": {DType: "f8"}}
		}, `m: unknown storage type "f8" (want f32, bf16 or f16)`},
		{"stochastic float32", func(h *handFunc) {
			h.fn.Storage = map[string]Storage{"m": {DType: lang.Float32, Stochastic: true}}
		}, "m: stochastic rounding of float32, which rounds nothing"},
		{"load marked uniform", func(h *handFunc) {
			h.g.Uniform = true
		}, "load is marked uniform=true, its operands say false"},
		{"hyper marked varying", func(h *handFunc) {
			h.lr.Uniform = false
		}, "hyper is marked uniform=false"},
		{"uniform op marked varying", func(h *handFunc) {
			h.lr32.Uniform = false
		}, "f32 is marked uniform=false, its operands say true"},
		{"varying op marked uniform", func(h *handFunc) {
			h.x.Uniform = true
		}, "mul is marked uniform=true, its operands say false"},
		{"store flag differs from its value", func(h *handFunc) {
			h.fn.Step.Stores()[0].Uniform = true
		}, "store is marked uniform=true"},
		{"binary op with one operand", func(h *handFunc) {
			h.x.Args = h.x.Args[:1]
		}, "mul has 1 operands"},
		{"unary op with two operands", func(h *handFunc) {
			h.lr32.Op = OpNeg
			h.lr32.Args = append(h.lr32.Args, h.lr)
		}, "neg has 2 operands"},
		{"store without operand", func(h *handFunc) {
			h.fn.Step.Stores()[0].Args = nil
		}, "store has 0 operands"},
		{"load with an operand", func(h *handFunc) {
			h.m.Args = []*Value{h.g}
		}, "load has 1 operands"},
		{"invalid op", func(h *handFunc) {
			h.fn.Step.NewValue(OpInvalid, F32, true)
		}, "unknown op 0"},
		{"scalars without their blocks", func(h *handFunc) {
			h.fn.Scalars = []string{"c"}
		}, "scalars [c] without both their blocks"},
		{"undeclared scalar", func(h *handFunc) {
			h.fn.Step.NewValue(OpScalar, F64, true).Name = "c"
		}, "scalar c in block step"},
		{"op out of range", func(h *handFunc) {
			h.fn.Step.NewValue(lastOp+1, F32, true)
		}, "unknown op"},
		{"const without type", func(h *handFunc) {
			h.fn.Init.Values[0].Type = None
		}, "const of type none"},
		{"store of a store", func(h *handFunc) {
			s := h.fn.Step.Stores()[0]
			store(h.fn.Step, "x", s)
		}, "store of a none value"},
		{"missing store of theta", func(h *handFunc) {
			remove(h.fn.Step, h.fn.Step.Stores()[1])
		}, "block step: no store of theta"},
		{"missing store of a state", func(h *handFunc) {
			remove(h.fn.Step, h.fn.Step.Stores()[0])
		}, "block step: no store of m"},
		{"init misses a state", func(h *handFunc) {
			remove(h.fn.Init, h.fn.Init.Stores()[0])
		}, "block init: no store of m"},
		{"observe misses an argument", func(h *handFunc) {
			remove(h.fn.ObsArgs, h.fn.ObsArgs.Stores()[0])
		}, "block observe: no store of a"},
		{"stored twice", func(h *handFunc) {
			store(h.fn.Step, "theta", h.x)
		}, "unexpected store of theta"},
		{"store of an unknown name", func(h *handFunc) {
			store(h.fn.Step, "q", h.x)
		}, "unexpected store of q"},
		{"init stores theta", func(h *handFunc) {
			store(h.fn.Init, "theta", h.fn.Init.Values[0])
		}, "block init: v2: unexpected store of theta"},
		{"step stores f64", func(h *handFunc) {
			s := h.fn.Step.Stores()[0]
			s.Args[0], s.Uniform = h.lr, true
		}, "store of m takes f32, not f64"},
		{"observe stores f32", func(h *handFunc) {
			h.fn.ObsArgs.Values[0].Type = F32
		}, "store of a takes f64, not f32"},
		{"unknown hyper", func(h *handFunc) {
			h.lr.Name = "beta"
		}, "unknown hyper beta"},
		{"load of an unknown name", func(h *handFunc) {
			h.m.Name = "q"
		}, "load of q in block step"},
		{"load outside step", func(h *handFunc) {
			store(h.fn.Init, "x", load(h.fn.Init, "g"))
		}, "load of g in block init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandFunc()
			tt.break_(h)
			err := Verify(h.fn)
			if err == nil {
				t.Fatalf("Verify accepted the broken function:\n%s", h.fn)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Verify: %v\nwant it to mention %q", err, tt.want)
			}
		})
	}
}

// withLine adds to h a row state r, which the step loads and stores back
// (a valid function), and returns the step's load of r.
func withLine(h *handFunc) *Value {
	h.fn.LineStates = []LineState{{Name: "r", Axis: lang.Rows}}
	store(h.fn.Init, "r", h.fn.Init.Values[0]).Axis = lang.Rows
	r := h.fn.Step.NewValue(OpLoad, F64, false)
	r.Name, r.Axis = "r", lang.Rows
	store(h.fn.Step, "r", r).Axis = lang.Rows
	return r
}

func TestVerifyLines(t *testing.T) {
	if err := Verify(func() *Func { h := newHandFunc(); withLine(h); return h.fn }()); err != nil {
		t.Fatalf("Verify of a valid function with a row state: %v", err)
	}
	tests := []struct {
		name   string
		break_ func(h *handFunc, r *Value)
		want   string
	}{
		{"line load without its axis", func(h *handFunc, r *Value) { r.Axis = lang.Coords }, "load is marked per coordinate, want per row"},
		{"line store without its axis", func(h *handFunc, r *Value) { h.fn.Step.Stores()[2].Axis = lang.Coords }, "store is marked per coordinate, want per row"},
		{"line load in f32", func(h *handFunc, r *Value) { r.Type = F32 }, "load has type f32, want f64"},
		{"row value with a column value", func(h *handFunc, r *Value) {
			c := h.fn.Step.NewValue(OpReduceCols, F64, false)
			c.Name, c.Axis = "r0", lang.Cols
			h.fn.Step.NewValue(OpAdd, F64, false, r, c).Axis = lang.Rows
		}, "add of a value per row and a value per column"},
		{"reduction over lines of a uniform value", func(h *handFunc, r *Value) {
			h.fn.Step.NewValue(OpLinesSum, F64, true, h.lr)
		}, "linessum of a value that is not per line"},
		{"line load in the init block", func(h *handFunc, r *Value) {
			v := h.fn.Init.NewValue(OpLoad, F64, false)
			v.Name, v.Axis = "r", lang.Rows
		}, "block init: v3: load has type f64, want f32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandFunc()
			tt.break_(h, withLine(h))
			err := Verify(h.fn)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Verify: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
