package gogen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
)

// env names the Go expressions of a block's values while generating it.
type env struct {
	g       *generator
	names   map[*ir.Value]jen.Code
	tSym    jen.Code // the step index as float64
	sigmaW2 jen.Code
	// steady reads attenuation(s) from the Host's steady<S> field, which
	// NewHost computes once (in scalarStep, which runs every step).
	steady bool
}

func (g *generator) newEnv() *env {
	return &env{g: g, names: map[*ir.Value]jen.Code{},
		tSym: jen.Float64().Call(jen.Id("t")), sigmaW2: jen.Id("sigmaW2")}
}

// ref is the Go expression for operand v.
func (e *env) ref(v *ir.Value) jen.Code {
	switch {
	case v.IsConst() && v.Type == ir.F32:
		return float32Lit(v.Const)
	case v.IsConst():
		return float64Lit(v.Const)
	}
	if c, ok := e.names[v]; ok {
		return c
	}
	return e.g.fail("value v%d (%s) is used before it is defined", v.ID, v.Op)
}

// define emits `name := expr` for a non-constant value and records its name.
func (e *env) define(v *ir.Value, prefix string) jen.Code { return e.defineAs(v, prefix, e.expr(v)) }

// defineAs emits `name := x` for v and records its name.
func (e *env) defineAs(v *ir.Value, prefix string, x jen.Code) jen.Code {
	name := fmt.Sprintf("%s%d", prefix, v.ID)
	e.names[v] = jen.Id(name)
	return jen.Id(name).Op(":=").Add(x)
}

// expr is the Go expression computing v from its operands.
func (e *env) expr(v *ir.Value) jen.Code {
	switch v.Op {
	case ir.OpHyper:
		return jen.Id("h").Dot(exportedName(v.Name))
	case ir.OpStepIndex:
		return e.tSym
	case ir.OpSigmaW2:
		return e.sigmaW2
	case ir.OpF32:
		return jen.Float32().Call(e.ref(v.Args[0]))
	case ir.OpLoad:
		return jen.Id(bufName(v.Name)).Index(jen.Id("i"))
	case ir.OpAtten:
		if e.steady {
			return jen.Id("c").Dot(steadyField(v.Name))
		}
		return steadyGainOf(v.Name)
	case ir.OpAttenT:
		return jen.Id("c").Dot(gainField(v.Name)).Dot("at").Call(jen.Id("t"))
	case ir.OpScalar:
		return jen.Id("sc").Index(jen.Lit(slices.Index(e.g.fn.Scalars, v.Name)))
	case ir.OpReduce, ir.OpReduceMax, ir.OpReduceMin:
		return jen.Id("r").Dot("Totals").Index(jen.Lit(slices.Index(e.g.fn.ReduceTerms(), v.Name)))
	case ir.OpNumel:
		return jen.Float64().Call(jen.Id("r").Dot("Numel"))
	}
	return e.arith(v)
}

var goOps = map[ir.Op]string{ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/"}

// arith rounds every operation explicitly to its type, which stops the Go
// compiler from fusing a multiply and an add.
func (e *env) arith(v *ir.Value) jen.Code {
	typ := jen.Float64()
	if v.Type == ir.F32 {
		typ = jen.Float32()
	}
	a := e.ref(v.Args[0])
	if op, ok := goOps[v.Op]; ok {
		return typ.Call(jen.Add(a).Op(op).Add(e.ref(v.Args[1])))
	}
	return e.call(v, a)
}

func (e *env) call(v *ir.Value, a jen.Code) jen.Code {
	f32 := v.Type == ir.F32
	switch {
	case v.Op == ir.OpNeg:
		return jen.Op("-").Add(a)
	case v.Op == ir.OpPow:
		return jen.Qual("math", "Pow").Call(a, e.ref(v.Args[1]))
	case v.Op == ir.OpSqrt && f32:
		return jen.Float32().Call(jen.Qual("math", "Sqrt").Call(jen.Float64().Call(a)))
	case v.Op == ir.OpSqrt:
		return jen.Qual("math", "Sqrt").Call(a)
	case v.Op == ir.OpAbs && f32:
		e.g.helpers["abs32"] = true
		return jen.Id("abs32").Call(a)
	case v.Op == ir.OpAbs:
		return jen.Qual("math", "Abs").Call(a)
	case goCompare[v.Op] != "":
		e.g.helpers["oneIf"] = true
		typ := jen.Float64()
		if f32 {
			typ = jen.Float32()
		}
		return jen.Id("oneIf").Types(typ).Call(jen.Add(a).Op(goCompare[v.Op]).Add(e.ref(v.Args[1])))
	case v.Op == ir.OpSelect:
		e.g.helpers["selectOf"] = true
		return jen.Id("selectOf").Call(a, e.ref(v.Args[1]), e.ref(v.Args[2]))
	case v.Op == ir.OpSign:
		e.g.helpers["signOf"] = true
		return jen.Id("signOf").Call(a)
	case hostMath[v.Op] != "":
		e.g.helpers[hostMath[v.Op]] = true
		return jen.Id(unexported(hostMath[v.Op])).Call(a)
	case v.Op == ir.OpMin, v.Op == ir.OpMax:
		name := v.Op.String() + "Of"
		e.g.helpers[name] = true
		return jen.Id(name).Call(a, e.ref(v.Args[1]))
	}
	return e.g.fail("no Go code for %s on %s", v.Op, v.Type)
}

// bufName is the Go name of the buffer behind a load or store.
func bufName(name string) string {
	if name == ir.GradName || name == ir.ThetaName {
		return name
	}
	return localName(name)
}

// tree is the Go expression computing v from hypers and constants as one
// expression tree, operand by operand, as ir.Func.EvalUniform evaluates it.
func (e *env) tree(v *ir.Value) jen.Code {
	if v.IsConst() { // a default such as 2 * 3, folded
		return e.ref(v)
	}
	for _, a := range v.Args {
		if !a.IsConst() {
			e.names[a] = e.tree(a)
		}
	}
	return e.expr(v)
}

// hostPart emits the uniform values of b as locals and returns the code.
func (e *env) hostPart(b *ir.Block) []jen.Code {
	var code []jen.Code
	for _, v := range b.Values {
		if v.Uniform && v.Op != ir.OpStore && !v.IsConst() {
			code = append(code, e.define(v, "u"))
		}
	}
	return code
}

// goCompare is the Go operator of each comparison: Go's float comparisons
// are IEEE's, as lang's (false with a NaN, but != true).
var goCompare = map[ir.Op]string{ir.OpEq: "==", ir.OpLt: "<", ir.OpLe: "<=", ir.OpGt: ">", ir.OpGe: ">=", ir.OpNe: "!="}

// hostMath names lang's function for each operation that only uniform
// values have, which the generated file splices from lang/hostmath.go.
var hostMath = map[ir.Op]string{ir.OpExp: "HostExp", ir.OpLog: "HostLog", ir.OpSin: "HostSin", ir.OpCos: "HostCos"}
