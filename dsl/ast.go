package dsl

import (
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// File is a parsed .dsl file. Its declarations keep source order; the
// convenience fields point at the first declaration of each singular kind.
type File struct {
	Filename string
	Src      []byte

	Decls     []Decl
	Optimizer *OptimizerDecl // nil if missing
	Hypers    []*HyperDecl
	States    []*StateDecl
	Scalars   []*ScalarDecl
	Observe   *ObserveDecl // nil if absent
	Noise     *NoiseDecl   // nil if absent: the noise is white
	Step      *StepDecl    // nil if missing
	Diags     []*DiagnosticDecl
}

// Name returns the optimizer's name, or "" when the file declares none.
func (f *File) Name() string {
	if f.Optimizer == nil || f.Optimizer.Name == nil {
		return ""
	}
	return f.Optimizer.Name.Name
}

// A Decl is a top-level declaration.
type Decl interface {
	Pos() Pos
	declNode()
}

// OptimizerDecl is `optimizer NAME`.
type OptimizerDecl struct {
	Keyword Pos
	Name    *Ident
}

// HyperDecl is `hyper NAME = DEFAULT [in RANGE] [alias ALIAS]`: DEFAULT
// is a signed number (Default) or an expression of numbers and earlier
// hypers (DefaultExpr, and Default nil).
type HyperDecl struct {
	Keyword     Pos
	Name        *Ident
	Default     *NumberLit // signed: Value holds the sign
	DefaultExpr Expr       // the default as written; a number too
	Range       *Range     // nil if unconstrained
	Alias       *Alias     // nil without one
}

// Alias is `alias NAME` or `alias NAME[INDEX]`: the name a binding accepts
// for the hyper besides its own (the PyTorch binding's weight_decay), or
// the hyper as element INDEX of the sequence NAME (betas[0]).
type Alias struct {
	Keyword Pos
	Name    *Ident
	Index   int // -1 for `alias NAME`
	Open    Pos // position of '[', if indexed
}

// Range is an interval `(lo, hi]` and the like, where it is written.
type Range struct {
	Open Pos // position of '(' or '['
	lang.Interval
}

// StateDecl is `state NAME = INIT`, or with an axis and a storage type
// `state NAME: [AXIS] [TYPE [ROUNDING]] = INIT` (docs/dsl.md, "Rows and
// columns", "Storage types").
type StateDecl struct {
	Keyword  Pos
	Name     *Ident
	Axis     *Ident // nil: per coordinate; else rows or cols (lang.AxisWords)
	Type     *Ident // nil: float32
	Rounding *Ident // nil: to nearest; else lang.Stochastic
	Init     Expr
}

// ScalarDecl is `scalar NAME = INIT`: a per-step uniform value carried from
// step to step on the host, in float64, updated in the step's host block.
type ScalarDecl struct {
	Keyword Pos
	Name    *Ident
	Init    Expr
}

// ObserveDecl is `observe KIND(arg = expr, ...)`, the observation that forms
// the gradient before clipping and noise (for now only two_point).
type ObserveDecl struct {
	Keyword Pos
	Kind    *Ident
	Args    []*Arg
}

// Arg is a named argument `name = expr`.
type Arg struct {
	Name  *Ident
	Value Expr
}

// StepDecl is the `step { ... }` block: the per-coordinate recursion, after
// the optional `host { ... }` block that updates the scalars (Host, at
// HostPos; nil without one).
type StepDecl struct {
	Keyword Pos
	HostPos Pos
	Host    []*AssignStmt
	Body    []*AssignStmt
	Rbrace  Pos
}

// NoiseDecl is the `noise { ... }` block (docs/dsl.md, "Correlated
// noise"): the noise buffers it declares, `buffer NAME` (per coordinate,
// starting at 0), then the statements that compute w, the noise that
// enters g as σ_w·w, from z, the step's fresh standard normal draw, and
// the buffers, and update the buffers.
type NoiseDecl struct {
	Keyword Pos
	Buffers []*BufferDecl
	Body    []*AssignStmt
	Rbrace  Pos
}

// BufferDecl is `buffer NAME` in the noise block.
type BufferDecl struct {
	Keyword Pos
	Name    *Ident
}

// DiagnosticDecl is `diagnostic KIND(name, ...)`: a per-step statistic of
// the step's values (for now only clamp_mass) that the runtime computes
// after a step when asked to.
type DiagnosticDecl struct {
	Keyword Pos
	Kind    *Ident
	Args    []*Ident
}

// AssignStmt is `name = expr` inside step: an update of a state or theta, or
// the binding of a local.
type AssignStmt struct {
	LHS *Ident
	RHS Expr
}

func (d *OptimizerDecl) Pos() Pos  { return d.Keyword }
func (d *HyperDecl) Pos() Pos      { return d.Keyword }
func (d *StateDecl) Pos() Pos      { return d.Keyword }
func (d *ScalarDecl) Pos() Pos     { return d.Keyword }
func (d *ObserveDecl) Pos() Pos    { return d.Keyword }
func (d *StepDecl) Pos() Pos       { return d.Keyword }
func (d *DiagnosticDecl) Pos() Pos { return d.Keyword }
func (d *NoiseDecl) Pos() Pos      { return d.Keyword }
func (*OptimizerDecl) declNode()   {}
func (*HyperDecl) declNode()       {}
func (*StateDecl) declNode()       {}
func (*ScalarDecl) declNode()      {}
func (*ObserveDecl) declNode()     {}
func (*StepDecl) declNode()        {}
func (*DiagnosticDecl) declNode()  {}
func (*NoiseDecl) declNode()       {}

// An Expr is an expression node.
type Expr interface {
	Pos() Pos
	exprNode()
}

// Ident is a name.
type Ident struct {
	NamePos Pos
	Name    string
}

// NumberLit is a numeric literal. Value is its float64 value.
type NumberLit struct {
	ValuePos Pos
	Lit      string
	Value    float64
}

// UnaryExpr is `-X`.
type UnaryExpr struct {
	OpPos Pos
	Op    Token
	X     Expr
}

// BinaryExpr is `X op Y` for + - * / **.
type BinaryExpr struct {
	X     Expr
	OpPos Pos
	Op    Token
	Y     Expr
}

// CallExpr is `fun(args)`.
type CallExpr struct {
	Fun    *Ident
	Args   []Expr
	Rparen Pos
}

// ParenExpr is `(X)`.
type ParenExpr struct {
	Lparen Pos
	X      Expr
}

// BadExpr stands for an expression that failed to parse.
type BadExpr struct {
	From Pos
}

func (x *Ident) Pos() Pos      { return x.NamePos }
func (x *NumberLit) Pos() Pos  { return x.ValuePos }
func (x *UnaryExpr) Pos() Pos  { return x.OpPos }
func (x *BinaryExpr) Pos() Pos { return x.X.Pos() }
func (x *CallExpr) Pos() Pos   { return x.Fun.NamePos }
func (x *ParenExpr) Pos() Pos  { return x.Lparen }
func (x *BadExpr) Pos() Pos    { return x.From }
func (*Ident) exprNode()       {}
func (*NumberLit) exprNode()   {}
func (*UnaryExpr) exprNode()   {}
func (*BinaryExpr) exprNode()  {}
func (*CallExpr) exprNode()    {}
func (*ParenExpr) exprNode()   {}
func (*BadExpr) exprNode()     {}

// Inspect calls f for x and, depth first, each of its subexpressions while f
// returns true.
func Inspect(x Expr, f func(Expr) bool) {
	if x == nil || !f(x) {
		return
	}
	switch x := x.(type) {
	case *UnaryExpr:
		Inspect(x.X, f)
	case *BinaryExpr:
		Inspect(x.X, f)
		Inspect(x.Y, f)
	case *CallExpr:
		for _, a := range x.Args {
			Inspect(a, f)
		}
	case *ParenExpr:
		Inspect(x.X, f)
	}
}

// storage is the declaration's axis and storage as written after the
// name: "", ": bf16", ": bf16 stochastic", ": rows".
func (d *StateDecl) storage() string {
	var words []string
	for _, w := range []*Ident{d.Axis, d.Type, d.Rounding} {
		if w != nil {
			words = append(words, w.Name)
		}
	}
	if len(words) == 0 {
		return ""
	}
	return ": " + strings.Join(words, " ")
}
