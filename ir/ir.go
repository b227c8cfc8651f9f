package ir

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/lang"
)

// Type is the type of a value.
type Type uint8

// The types of values: uniform values are F64, varying values F32.
const (
	None Type = iota // stores have no result
	F32
	F64
)

func (t Type) String() string {
	if t > F64 {
		return fmt.Sprintf("type(%d)", uint8(t))
	}
	return [...]string{"none", "f32", "f64"}[t]
}

// Op is an operation: one of the language's arithmetic operations
// (lang.Op, whose number it keeps), or one of the IR's own.
type Op uint8

// OpInvalid is the zero Op.
const OpInvalid Op = 0

// The language's operations: package lang holds what each computes (ir.Eval64,
// ir.Eval32), its name and its number of operands (lang.Op), once.
const (
	OpNeg    = Op(lang.Neg)
	OpAdd    = Op(lang.Add)
	OpSub    = Op(lang.Sub)
	OpMul    = Op(lang.Mul)
	OpDiv    = Op(lang.Div)
	OpPow    = Op(lang.Pow) // uniform only
	OpSqrt   = Op(lang.Sqrt)
	OpAbs    = Op(lang.Abs)
	OpMin    = Op(lang.Min)
	OpMax    = Op(lang.Max)
	OpEq     = Op(lang.Eq)     // 1 if Args[0] == Args[1] (IEEE: NaN equals nothing, -0 == +0), else 0
	OpSign   = Op(lang.Sign)   // 1 if Args[0] > 0, -1 if < 0, else Args[0] (lang.SignOf)
	OpExp    = Op(lang.Exp)    // uniform only (lang.HostExp)
	OpLog    = Op(lang.Log)    // uniform only (lang.HostLog)
	OpSin    = Op(lang.Sin)    // uniform only (lang.HostSin)
	OpCos    = Op(lang.Cos)    // uniform only (lang.HostCos)
	OpLt     = Op(lang.Lt)     // 1 if Args[0] < Args[1], else 0 (lang.Lt)
	OpLe     = Op(lang.Le)     // 1 if Args[0] <= Args[1], else 0
	OpGt     = Op(lang.Gt)     // 1 if Args[0] > Args[1], else 0
	OpGe     = Op(lang.Ge)     // 1 if Args[0] >= Args[1], else 0
	OpNe     = Op(lang.Ne)     // 1 if Args[0] != Args[1] (NaN: 1), else 0
	OpSelect = Op(lang.Select) // Args[1] if Args[0] != 0, else Args[2] (lang.SelectOf)
)

// The IR's own operations, numbered after the language's.
const (
	OpConst      Op = Op(lang.LastOp) + 1 + iota // Const holds the value (rounded to float32 for F32)
	OpHyper                                      // Name is the hyper
	OpStepIndex                                  // t, the step index from 0
	OpSigmaW2                                    // the DP noise variance per coordinate
	OpLoad                                       // Name is g, theta or a state: its value before the step
	OpF32                                        // float64 → float32: a host scalar when used by the kernel
	OpAtten                                      // attenuation(Name) solved numerically on the host (Func.Filter(Name))
	OpAttenT                                     // attenuation_t(Name) at step Args[0]: the finite-time gain, on the host
	OpStore                                      // Name is theta, a state, a scalar, an observation output or a model entry; no result
	OpScalar                                     // Name is a scalar: its value at this step (in the scalar step block: at the step before)
	OpDraw                                       // z, the coordinate's fresh standard normal draw of the noise block (0 when the step draws no noise)
	OpPrivatize                                  // the privatized gradient of a noise block: Args[0], the clipped mean, plus σ_w·Args[1], the noise w, in the step's noise scheme
	OpReduce                                     // Name is a term of the reduce block (r0, r1, …): the float64 sum of its values over the coordinate's tensor (Func.Reduce)
	OpNumel                                      // the number of coordinates of the coordinate's tensor
	OpReduceMax                                  // as OpReduce, the maximum (lang.MaxOf) of the term's values over the tensor
	OpReduceMin                                  // as OpReduce, the minimum (lang.MinOf)
	OpReduceRows                                 // as OpReduce, the float64 sum of the term along each row of the tensor: a line value (lines.go)
	OpReduceCols                                 // as OpReduceRows, along each column
	OpRows                                       // the number of rows of the coordinate's tensor
	OpCols                                       // the number of columns of the coordinate's tensor
	OpLinesSum                                   // Args[0], a line value: the float64 sum of its values over the tensor's rows (columns), in order
	OpLinesMax                                   // as OpLinesSum, the maximum (lang.MaxOf)
	OpLinesMin                                   // as OpLinesSum, the minimum (lang.MinOf)

	lastOp = OpLinesMin
)

// ownOps are the IR's own operations, by name.
var ownOps = map[Op]string{
	OpInvalid: "invalid", OpConst: "const", OpHyper: "hyper", OpStepIndex: "t",
	OpSigmaW2: "sigma_w2", OpLoad: "load", OpF32: "f32", OpAtten: "attenuation",
	OpAttenT: "attenuation_t", OpStore: "store", OpScalar: "scalar", OpDraw: "draw", OpPrivatize: "privatize",
	OpReduce: "reduce", OpNumel: "numel", OpReduceMax: "reducemax", OpReduceMin: "reducemin",
	OpReduceRows: "reducerows", OpReduceCols: "reducecols", OpRows: "rows", OpCols: "cols",
	OpLinesSum: "linessum", OpLinesMax: "linesmax", OpLinesMin: "linesmin",
}

// String is the operation's name in dumps and in the JSON form.
func (o Op) String() string {
	if l := o.lang(); l != 0 {
		return l.Name()
	}
	if name, ok := ownOps[o]; ok {
		return name
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// IsCommutative reports whether swapping the operands never changes the
// result bits (min and max are not: they choose between equal zeros).
func (o Op) IsCommutative() bool { return o == OpAdd || o == OpMul }

// Value is one SSA instruction.
type Value struct {
	ID      int // unique within its block; the dump renumbers
	Op      Op
	Type    Type
	Uniform bool
	Args    []*Value
	Const   float64 // for OpConst
	Name    string  // for OpHyper, OpLoad, OpStore; for OpSelect, the state it starts (StartOf)
	// Axis is lang.Rows or lang.Cols for a line value (an f64 value that
	// is not uniform, one per row or column of the tensor, which the host
	// computes: lines.go) and for the store of a line state; lang.Coords
	// for every other value.
	Axis lang.Axis
}

// IsConst reports whether v is a constant.
func (v *Value) IsConst() bool { return v.Op == OpConst }

// BlockKind says what a block computes, and so what it may load and must
// store.
type BlockKind uint8

// The kinds of blocks.
const (
	InitBlock         BlockKind = iota + 1 // the states' initial values (f32)
	ObserveBlock                           // the observation's arguments at a step (f64)
	StepBlock                              // the step of one coordinate: theta and the new states (f32)
	ModelBlock                             // a filter's noise model M and b at a hyper setting (f64)
	DiagBlock                              // a diagnostic's terms of one coordinate after the step (f32)
	ScalarInitBlock                        // the scalars' values before step 0 (f64)
	ScalarStepBlock                        // the scalars' values at step t from those at t-1 (f64)
	HyperDefaultBlock                      // the derived hypers' defaults from earlier hypers (f64)
	ReduceBlock                            // the terms of the step's per-tensor sums at one coordinate, before the step (f32)
)

var kindNames = [...]string{InitBlock: "init", ObserveBlock: "observe", StepBlock: "step", ModelBlock: "model", DiagBlock: "diagnostic",
	ScalarInitBlock: "scalar init", ScalarStepBlock: "scalar step", HyperDefaultBlock: "hyper defaults", ReduceBlock: "reduce"}

func (k BlockKind) String() string {
	if int(k) >= len(kindNames) || kindNames[k] == "" {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// Block is a straight-line list of values in execution order.
type Block struct {
	Name   string
	Kind   BlockKind
	Values []*Value
	nextID int
}

// NewValue appends a value to the block.
func (b *Block) NewValue(op Op, typ Type, uniform bool, args ...*Value) *Value {
	v := &Value{ID: b.nextID, Op: op, Type: typ, Uniform: uniform, Args: args}
	b.nextID++
	b.Values = append(b.Values, v)
	return v
}

// Stores returns the block's stores in order.
func (b *Block) Stores() []*Value {
	var out []*Value
	for _, v := range b.Values {
		if v.Op == OpStore {
			out = append(out, v)
		}
	}
	return out
}

// ReadsScalar says whether b, optimized (no dead values), reads scalar
// name.
func (b *Block) ReadsScalar(name string) bool {
	return slices.ContainsFunc(b.Values, func(v *Value) bool { return v.Op == OpScalar && v.Name == name })
}

// Hyper is a hyperparameter with its default and allowed range. A
// Derived hyper's default is an expression of earlier hypers, which
// Func.HyperDefaults computes; Default is its value at their defaults.
type Hyper struct {
	Name    string
	Default float64
	Range   *lang.Interval // nil: any finite value
	Derived bool
	Alias   *Alias // the name a binding accepts besides Name; nil without one
}

// Alias is a hyper's `alias` (docs/dsl.md): the name a binding accepts for
// it (weight_decay), or, with an Index, the element of a sequence it is
// (betas[0]). It names the hyper and changes nothing it computes.
type Alias struct {
	Name  string `json:"name"`
	Index *int   `json:"index,omitempty"` // nil for a plain alias
}

// String returns the alias as the DSL writes it: weight_decay, betas[0].
func (a *Alias) String() string {
	if a.Index == nil {
		return a.Name
	}
	return fmt.Sprintf("%s[%d]", a.Name, *a.Index)
}

// Observation is the observe declaration: its kind; the observe block stores
// one output per argument.
type Observation struct {
	Kind string
	Args []string
}

// Func is one optimizer.
type Func struct {
	Name   string
	Hypers []Hyper
	States []string
	// LineStates are the states declared per row or per column (lines.go),
	// which are not buffers of the kernels' ABI as States are.
	LineStates []LineState
	// Storage is the storage of the states declared narrower than float32
	// (storage.go), by name; a state not in it, and theta and g, store
	// float32.
	Storage map[string]Storage
	Observe *Observation // nil without an observe declaration
	Init    *Block       // stores every state's initial value
	ObsArgs *Block       // stores the observation's arguments (f64)
	Step    *Block       // stores theta and every state
	Filters []*Filter    // the noise models the host needs, one per state named by attenuation or attenuation_t
	// Varying are the filters whose coefficients read t or scalars
	// (noise.StateNoise.Varying), one per set of states: Bounded, their
	// models read t and the scalars at the step, and the host checks them
	// at every step (interp.Program.CheckVarying).
	Varying []*Filter
	Diags   []*Diagnostic // the declared diagnostics, each its own block (lower_diag.go)
	// Scalars are the per-step uniform values carried from step to step on
	// the host; ScalarInit stores their values before step 0 (from the
	// hypers) and ScalarStep their values at step t from those at step t-1
	// (OpScalar), the hypers and t: so they are a function of the hypers
	// and t. Both blocks are nil without scalars.
	Scalars    []string
	ScalarInit *Block
	ScalarStep *Block
	// HyperDefaults stores, in declaration order, the default of every
	// Derived hyper from the hypers before it; nil without one.
	HyperDefaults *Block
	// Noise is the noise filter of a noise block (docs/dsl.md,
	// "Correlated noise"), nil without one, when the noise is white and
	// the kernels add it to g before the step. With one, the step reads
	// OpDraw, stores the noise buffers (the last len(Noise.States)
	// States) and privatizes g itself (OpPrivatize).
	Noise *Filter
	// Reduce, nil without one, computes per coordinate the terms of the
	// step's per-tensor sums (norm, sum and mean in the DSL) from the
	// buffers before the step, g privatized as the step reads it: it
	// stores term r<i> (ReduceTerm) for the step's OpReduce r<i>, which
	// reads its sum over the coordinate's tensor. The runtime runs it as a
	// pass of its own before the step (docs/kernels.md, "Reductions").
	Reduce *Block
}

// Filter is the linear model z_t = M z_{t-1} + b w_t by which the DP noise
// reaches a state that attenuation or attenuation_t names, as the host
// evaluates it: at every hyper setting it checks that M is stable, and it
// computes the attenuation values that have no closed form.
type Filter struct {
	State  string
	States []string // z; State is States[Target]
	Target int
	Model  *Block // stores M row by row ("m_i_j"), then b ("b_i"), as f64 values of the hypers
	Expr   string // the closed form of attenuation(State), or "" if it is computed numerically
	// Stability holds the conditions, "… > 0", under which M is stable,
	// where fibergen could derive them (see Gain.Stability).
	Stability []string
	// Start, where set, quotes how the filter starts otherwise at step 0
	// (noise.StateNoise.Start): its finite-time gain, which assumes every
	// state starts from its buffer, is not derived.
	Start string
	// Limit marks the limit, as t grows, of a time-varying filter (the
	// filter itself is in Func.Varying): attenuation(State) is its steady
	// value, and attenuation_t(State) is not this model's but the
	// covariance the host follows step by step.
	Limit bool
	// Bounded marks the filter of a state that no attenuation names: it is
	// checked only for growth, so a spectral radius of exactly 1 (an
	// accumulator s = s + g, θ's own update) stays legal (Filter.Stable).
	Bounded bool
	// Noise marks the noise filter (Func.Noise): States are the noise
	// buffers s, with s_{t+1} = M s_t + b z_t, and Model stores after M
	// and b the output w_t = h·s_t + d z_t: h_i, then d. Its Toeplitz
	// coefficients are d, h·b, h·M·b, ... (NoiseCoefficients).
	Noise bool
}

// Blocks returns the function's blocks.
func (f *Func) Blocks() []*Block {
	bs := []*Block{f.Init, f.ObsArgs, f.Step}
	if f.ScalarInit != nil {
		bs = append(bs, f.ScalarInit, f.ScalarStep)
	}
	if f.HyperDefaults != nil {
		bs = append(bs, f.HyperDefaults)
	}
	for _, fl := range slices.Concat(f.Filters, f.Varying) {
		bs = append(bs, fl.Model)
	}
	if f.Noise != nil {
		bs = append(bs, f.Noise.Model)
	}
	for _, d := range f.Diags {
		bs = append(bs, d.Block)
	}
	if f.Reduce != nil {
		bs = append(bs, f.Reduce)
	}
	return bs
}

// Filter returns the filter of the named state, or nil.
func (f *Func) Filter(state string) *Filter {
	for _, fl := range f.Filters {
		if fl.State == state {
			return fl
		}
	}
	return nil
}

// NoiseBuffers lists the noise block's buffers: the last States; nil
// without a noise block.
func (f *Func) NoiseBuffers() []string {
	if f.Noise == nil {
		return nil
	}
	return f.Noise.States
}

// HyperIndex returns the index of the named hyper, or -1.
func (f *Func) HyperIndex(name string) int {
	for i, h := range f.Hypers {
		if h.Name == name {
			return i
		}
	}
	return -1
}
