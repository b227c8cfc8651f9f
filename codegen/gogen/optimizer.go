package gogen

import (
	"slices"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// fieldName is the Optimizer field of a state.
func fieldName(state string) string {
	name := exportedName(state)
	if name == "Hypers" || name == "T" {
		return name + "_"
	}
	return name
}

func (g *generator) stateFields(recv string) []jen.Code {
	var out []jen.Code
	for _, s := range g.fn.States {
		out = append(out, jen.Id(recv).Dot(fieldName(s)))
	}
	return out
}

func (g *generator) genOptimizer() {
	fields := []jen.Code{
		jen.Id("Hypers").Id("Hypers").Comment("the hypers of the next step; a change is checked there"),
		jen.Id("T").Int().Comment("steps taken so far; the next step is step T"),
		jen.Id("Noise").Bool().Comment("Update draws the DP noise (g is the clipped mean gradient); New sets it"),
		jen.Id("Seed").Uint64().Comment("keys the noise; New draws it from crypto/rand"),
	}
	if g.fn.MixingWeight() >= 0 {
		fields = append(fields, jen.Id("AllowExtrapolation").Bool().Comment("opt in to a two_point weight a outside [0, 1] (CheckObservation)"))
	}
	alloc := []jen.Code{keyValue("Hypers", jen.Id("h")), keyValue("host", jen.Id("host")),
		keyValue("Noise", jen.True()), keyValue("Seed", jen.Qual("encoding/binary", "LittleEndian").Dot("Uint64").Call(jen.Id("seed").Index(jen.Op(":"))))}
	for _, s := range g.fn.States {
		fields = append(fields, jen.Id(fieldName(s)).Index().Float32().Comment("state "+s))
		alloc = append(alloc, keyValue(fieldName(s), jen.Make(jen.Index().Float32(), jen.Id("n"))))
	}
	fields = append(fields, jen.Id("host").Op("*").Id("Host"))
	g.file.Comment("Optimizer holds the hypers, the state buffers and the step counter.")
	g.file.Type().Id("Optimizer").Struct(fields...)

	g.file.Comment("New checks h and returns an Optimizer for n coordinates with its states")
	g.file.Comment("at their initial values, drawing the DP noise in Update from a random seed.")
	g.file.Func().Id("New").Params(jen.Id("h").Id("Hypers"), jen.Id("n").Int()).Params(jen.Op("*").Id("Optimizer"), jen.Error()).Block(
		jen.List(jen.Id("host"), jen.Err()).Op(":=").Id("NewHost").Call(jen.Id("h")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Var().Id("seed").Index(jen.Lit(8)).Byte(),
		jen.Qual("crypto/rand", "Read").Call(jen.Id("seed").Index(jen.Op(":"))),
		jen.Id("o").Op(":=").Op("&").Id("Optimizer").Values(append(alloc, jen.Line())...),
		jen.Id("Init").Call(append([]jen.Code{jen.Id("h")}, g.stateFields("o")...)...),
		jen.Return(jen.Id("o"), jen.Nil()),
	)

	host := jen.Id("o").Dot("host")
	nz := jen.Id("Noise").Values(jen.Dict{jen.Id("On"): jen.Id("o").Dot("Noise"), jen.Id("Seed"): jen.Id("o").Dot("Seed"), jen.Id("Step"): jen.Uint32().Call(jen.Id("o").Dot("T"))})
	scalars := []jen.Code{jen.Id("o").Dot("T"), jen.Id("sigmaW2")}
	args := append([]jen.Code{host.Clone().Dot("Scalars").Call(scalars...), nz, jen.Id("theta"), jen.Id("g")}, g.stateFields("o")...)
	var reduce []jen.Code
	if g.fn.Reduce != nil { // the buffers are one tensor, whose scalars are checked before the step, as the runtime does (no coordinates: nothing to spoil)
		args[0] = host.Clone().Dot("Scalars").Call(append(scalars, jen.Id("r"))...)
		reduce = []jen.Code{jen.Id("r").Op(":=").Add(host.Clone()).Dot("Reduce").Call(append([]jen.Code{jen.Id("o").Dot("T"), jen.Id("sigmaW2"), nz, jen.Id("theta"), jen.Id("g")}, g.stateFields("o")...)...),
			jen.Id("s").Op(":=").Add(args[0]),
			jen.If(jen.Err().Op(":=").Id("s").Dot("checkFinite").Call(), jen.Len(jen.Id("theta")).Op(">").Lit(0).Op("&&").Err().Op("!=").Nil()).Block(
				jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(g.fn.Name+": step %d: %w"), jen.Id("o").Dot("T"), jen.Err())))}
		args[0] = jen.Id("s")
	}
	g.file.Comment("Update runs step o.T on theta with the gradient g and the DP noise")
	g.file.Comment("variance per coordinate sigmaW2, then advances o.T. With o.Noise, g is")
	g.file.Comment("the clipped mean gradient and Update adds the noise; without, g is")
	g.file.Comment("privatized already. If o.Hypers changed since the last step to a setting")
	g.file.Comment("NewHost rejects, sigmaW2 is not a finite value >= 0, theta and g are not")
	g.file.Comment("as long as the states, or the noise would run out of steps (2^32), it")
	g.file.Comment("returns the error and changes nothing.")
	if g.fn.MixingWeight() >= 0 {
		g.file.Comment("So it does for a two_point weight a outside [0, 1] unless")
		g.file.Comment("o.AllowExtrapolation (CheckObservation).")
	}
	if len(g.fn.Varying) > 0 {
		g.file.Comment("So it does at a step where a time-varying filter grows (checkVarying).")
	}
	g.file.Func().Params(jen.Id("o").Op("*").Id("Optimizer")).Id("Update").Params(jen.List(jen.Id("theta"), jen.Id("g")).Index().Float32(), jen.Id("sigmaW2").Float64()).Error().Block(slices.Concat([]jen.Code{
		jen.If(host.Clone().Op("==").Nil().Op("||").Add(host.Clone()).Dot("Hypers").Call().Op("!=").Id("o").Dot("Hypers")).Block(
			jen.List(jen.Id("h"), jen.Err()).Op(":=").Id("NewHost").Call(jen.Id("o").Dot("Hypers")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			host.Clone().Op("=").Id("h"),
		),
		jen.If(jen.Id("o").Dot("Noise").Op("&&").Id("o").Dot("T").Op(">=").Lit(1).Op("<<").Lit(32)).Block(
			jen.Return(jen.Qual("errors", "New").Call(jen.Lit(g.fn.Name + ": the noise generator counts at most 2^32 steps")))),
		g.observationCheck(),
		g.updateArgsCheck(),
		g.varyingCheckCall(host),
	}, reduce, []jen.Code{
		jen.Id("Step").Call(args...),
		jen.Id("o").Dot("T").Op("++"),
		jen.Return(jen.Nil()),
	})...)
	g.genLookaheadPoint()
}

// genCheckFinite emits Scalars.checkFinite, which reports the first host
// scalar that is NaN or ±Inf, with the runtime's message
// (ir.NonFiniteHostFormat), one a scalar in nonFiniteFormats.
func (g *generator) genCheckFinite() {
	var fields, formats []jen.Code
	for i, v := range g.scalars {
		fields = append(fields, jen.Id("s").Dot(g.names[v]))
		formats = append(formats, jen.Line().Lit(ir.NonFiniteHostFormat(i, ir.ExprString(v))))
	}
	formats = append(formats, jen.Line())
	x := jen.Id("x")
	g.file.Comment("nonFiniteFormats are checkFinite's messages, one a host scalar.")
	g.file.Var().Id("nonFiniteFormats").Op("=").Index().String().Values(formats...)
	g.file.Comment("checkFinite reports the first host scalar that is NaN or ±Inf: a reduction")
	g.file.Comment("gave the step a value that would spoil the tensor.")
	g.file.Func().Params(jen.Id("s").Id("Scalars")).Id("checkFinite").Params().Error().Block(
		jen.For(jen.List(jen.Id("i"), x).Op(":=").Range().Index().Float32().Values(fields...)).Block(
			jen.If(x.Clone().Op("!=").Add(x.Clone()).Op("||").Qual("math", "IsInf").Call(jen.Float64().Call(x.Clone()), jen.Lit(0))).Block(
				jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Id("nonFiniteFormats").Index(jen.Id("i")), x.Clone())))),
		jen.Return(jen.Nil()))
}

// varyingCheckCall is Update's call of Host.checkVarying, or nothing for
// an optimizer without time-varying filters.
func (g *generator) varyingCheckCall(host *jen.Statement) jen.Code {
	if len(g.fn.Varying) == 0 {
		return jen.Null()
	}
	return jen.If(jen.Err().Op(":=").Add(host.Clone()).Dot("checkVarying").Call(jen.Id("o").Dot("T"), jen.Id("sigmaW2")), jen.Err().Op("!=").Nil()).Block(
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(g.fn.Name+": step %d refused, nothing changed: %w"), jen.Id("o").Dot("T"), jen.Err())))
}

// genLookaheadPoint emits Optimizer.LookaheadPoint for a two_point
// optimizer: where the trainer evaluates the look-ahead gradients.
func (g *generator) genLookaheadPoint() {
	if g.fn.MixingWeight() < 0 {
		return
	}
	g.file.Comment("LookaheadPoint returns the look-ahead point of the next step,")
	g.file.Comment("θ_t + γ·(θ_t − θ_{t−1}), where the trainer evaluates the first gradient")
	g.file.Comment("of the two_point observation: theta itself before the first step (d_{−1} = 0),")
	g.file.Comment("then the state that each step writes.")
	g.file.Func().Params(jen.Id("o").Op("*").Id("Optimizer")).Id("LookaheadPoint").Params(jen.Id("theta").Index().Float32()).Index().Float32().Block(
		jen.If(jen.Id("o").Dot("T").Op("==").Lit(0)).Block(jen.Return(jen.Id("theta"))),
		jen.Return(jen.Id("o").Dot(fieldName(lang.LookaheadState))),
	)
}

// updateArgsCheck is Update's check of its arguments: a noise variance
// that is a finite value >= 0, and theta and g as long as the states (as
// long as each other, for an optimizer without states).
func (g *generator) updateArgsCheck() jen.Code {
	name := g.fn.Name
	sigma := jen.If(jen.Op("!").Parens(jen.Id("sigmaW2").Op(">=").Lit(0)).Op("||").Qual("math", "IsInf").Call(jen.Id("sigmaW2"), jen.Lit(1))).Block(
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(name+": noise variance sigmaW2 = %v: want a finite value >= 0"), jen.Id("sigmaW2"))))
	lenTheta, lenG := jen.Len(jen.Id("theta")), jen.Len(jen.Id("g"))
	if len(g.fn.States) == 0 {
		return jen.Add(sigma, jen.Line(), jen.If(lenG.Clone().Op("!=").Add(lenTheta.Clone())).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(name+": theta has %d values and g %d"), lenTheta, lenG))))
	}
	n := jen.Len(jen.Id("o").Dot(fieldName(g.fn.States[0])))
	return jen.Add(sigma, jen.Line(), jen.If(lenTheta.Clone().Op("!=").Add(n.Clone()).Op("||").Add(lenG.Clone()).Op("!=").Add(n.Clone())).Block(
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(name+": theta has %d values and g %d; the optimizer has %d coordinates"), lenTheta, lenG, n))))
}

// observationCheck is Update's call of CheckObservation, or nothing for an
// optimizer without a two_point weight.
func (g *generator) observationCheck() jen.Code {
	if g.fn.MixingWeight() < 0 {
		return jen.Null()
	}
	return jen.If(jen.Op("!").Id("o").Dot("AllowExtrapolation")).Block(
		jen.If(jen.Err().Op(":=").Id("CheckObservation").Call(jen.Id("o").Dot("Hypers"), jen.Id("o").Dot("T")), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%w (set Optimizer.AllowExtrapolation)"), jen.Err()))))
}

// genHelpers emits the helper functions the generated code calls.
func (g *generator) genHelpers() {
	for _, name := range []string{"maxOf", "minOf"} {
		if g.helpers[name] {
			g.genMinMax(name)
		}
	}
	if g.helpers["abs32"] {
		g.file.Comment("abs32 clears the sign bit.")
		g.file.Func().Id("abs32").Params(jen.Id("x").Float32()).Float32().Block(
			jen.Return(jen.Qual("math", "Float32frombits").Call(jen.Qual("math", "Float32bits").Call(jen.Id("x")).Op("&^").Parens(jen.Lit(1).Op("<<").Lit(31)))))
	}
	if g.helpers["signOf"] {
		x := jen.Id("x")
		g.file.Comment("signOf is the DSL's sign: 1 if x > 0, -1 if x < 0, else x (±0 and NaN as they are).")
		g.file.Func().Id("signOf").Types(jen.Id("T").Union(jen.Float32(), jen.Float64())).Params(x.Clone().Id("T")).Id("T").Block(
			jen.If(x.Clone().Op(">").Lit(0)).Block(jen.Return(jen.Lit(1))),
			jen.If(x.Clone().Op("<").Lit(0)).Block(jen.Return(jen.Lit(-1))),
			jen.Return(x),
		)
	}
	g.genSelections()
	g.spliceHostMath()
}

// genSelections emits oneIf and selectOf, the comparisons' 1 or 0 and the
// DSL's select (lang.SelectOf), if the code calls them.
func (g *generator) genSelections() {
	T, c, x, y := jen.Id("T"), jen.Id("c"), jen.Id("x"), jen.Id("y")
	floats := T.Clone().Union(jen.Float32(), jen.Float64())
	if g.helpers["oneIf"] {
		g.file.Comment("oneIf is 1 if b, else 0: a comparison's value.")
		g.file.Func().Id("oneIf").Types(floats).Params(jen.Id("b").Bool()).Add(T).Block(
			jen.If(jen.Id("b")).Block(jen.Return(jen.Lit(1))),
			jen.Return(jen.Lit(0)))
	}
	if g.helpers["selectOf"] {
		g.file.Comment("selectOf is the DSL's select: x where c != 0, else y.")
		g.file.Func().Id("selectOf").Types(floats).Params(jen.List(c, x, y).Add(T)).Add(T).Block(
			jen.If(c.Clone().Op("!=").Lit(0)).Block(jen.Return(x)),
			jen.Return(y))
	}
}

// spliceHostMath splices lang's exp, log, sin and cos that the host part
// of the step calls.
func (g *generator) spliceHostMath() {
	var roots []string
	for _, name := range hostMath {
		if g.helpers[name] {
			roots = append(roots, name)
		}
	}
	if len(roots) > 0 {
		slices.Sort(roots)
		g.splice(hostMathFile, roots...)
	}
}

// genMinMax emits maxOf or minOf with the DSL's semantics (lang.MaxOf): NaN if
// either operand is NaN, the second operand when they compare equal.
func (g *generator) genMinMax(name string) {
	cmp := ">="
	doc := "maxOf is the DSL's max: NaN if either is NaN, else the larger, b on a tie."
	if name == "minOf" {
		cmp = "<="
		doc = "minOf is the DSL's min: NaN if either is NaN, else the smaller, b on a tie."
	}
	a, b := jen.Id("a"), jen.Id("b")
	g.file.Comment(doc)
	g.file.Func().Id(name).Types(jen.Id("T").Union(jen.Float32(), jen.Float64())).Params(jen.List(a, b).Id("T")).Id("T").Block(
		jen.If(jen.Add(a).Op("!=").Add(a)).Block(jen.Return(a)),
		jen.If(jen.Add(b).Op("!=").Add(b).Op("||").Add(b).Op(cmp).Add(a)).Block(jen.Return(b)),
		jen.Return(a),
	)
}
