package gogen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

func (g *generator) genObservation() {
	if g.fn.Observe == nil {
		return
	}
	e := g.newEnv()
	body := e.hostPart(g.fn.ObsArgs)
	var results, names []jen.Code
	for i, s := range g.fn.ObsArgs.Stores() {
		results = append(results, e.ref(s.Args[0]))
		names = append(names, jen.Id(localName(g.fn.Observe.Args[i])))
	}
	body = append(body, jen.Return(results...))
	g.file.Commentf("Observation returns the arguments of the %s observation at step t.", g.fn.Observe.Kind)
	g.file.Func().Id("Observation").Params(jen.Id("h").Id("Hypers"), jen.Id("t").Int()).Parens(jen.List(names...).Float64()).Block(body...)
	g.genCheckObservation()
}

// genCheckObservation emits CheckObservation, ir.Func.CheckObservation for
// the package: a two_point mixing weight a outside [0, 1] is an error that
// Update returns unless the Optimizer opts in (AllowExtrapolation).
func (g *generator) genCheckObservation() {
	i := g.fn.MixingWeight()
	if i < 0 {
		return
	}
	results := make([]jen.Code, len(g.fn.Observe.Args))
	for j := range results {
		results[j] = jen.Id("_")
	}
	results[i] = jen.Id("a")
	expr := ir.ExprString(g.fn.ObsArgs.Stores()[i].Args[0])
	format, args := g.settingFormat(g.fn.ObsArgs)
	g.file.Comment("CheckObservation reports a two_point mixing weight a outside [0, 1] at step t:")
	g.file.Comment("the observation then extrapolates past the two gradients and can inflate")
	g.file.Comment("each example's gradient before clipping (FiBeR paper, Appendix F).")
	g.file.Func().Id("CheckObservation").Params(jen.Id("h").Id("Hypers"), jen.Id("t").Int()).Error().Block(
		jen.List(results...).Op(":=").Id("Observation").Call(jen.Id("h"), jen.Id("t")),
		jen.If(jen.Id("a").Op(">=").Lit(0).Op("&&").Id("a").Op("<=").Lit(1)).Block(jen.Return(jen.Nil())),
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(ir.ExtrapolationFormat), jen.Lit(expr), jen.Id("a"),
			jen.Qual("fmt", "Sprintf").Call(append([]jen.Code{jen.Lit(format)}, args...)...), jen.Id("t"))),
	)
}

func (g *generator) genInit() {
	e := g.newEnv()
	body := e.hostPart(g.fn.Init)
	for _, s := range g.fn.Init.Stores() {
		buf := localName(s.Name)
		x := e.ref(s.Args[0])
		if st := g.fn.StorageOf(s.Name); st.Narrow() { // to nearest: no step to draw rounding bits for
			x = roundCall(ir.Storage{DType: st.DType}, x, jen.Lit(0))
		}
		body = append(body, jen.For(jen.Id("i").Op(":=").Range().Id(buf)).Block(
			jen.Id(buf).Index(jen.Id("i")).Op("=").Add(x)))
	}
	if len(g.fn.States) == 0 {
		body = append(body, jen.Id("_").Op("=").Id("h"))
	}
	g.file.Comment("Init sets every state buffer to its initial value.")
	params := []jen.Code{jen.Id("h").Id("Hypers")}
	if len(g.fn.States) > 0 {
		params = append(params, jen.List(g.stateParams()...).Index().Float32())
	}
	g.file.Func().Id("Init").Params(params...).Block(body...)
}

func (g *generator) genStep() {
	e := g.newEnv()
	for _, v := range g.scalars {
		e.names[v] = jen.Id("s").Dot(g.names[v])
	}
	loop := []jen.Code{}
	noiseOn := jen.If(jen.Id("nz").Dot("On").Op("||").Id("nz").Dot("Secure"))
	for _, v := range g.fn.Step.Values {
		switch {
		case v.Op == ir.OpDraw:
			loop = append(loop, e.defineAs(v, "v", jen.Float32().Call(jen.Lit(0))), noiseOn.Clone().Block(
				e.names[v].(*jen.Statement).Clone().Op("=").Id("nz").Dot("draw").Call(jen.Id("s").Dot("SigmaW"), jen.Id("i"), jen.Op("&").Id("cache"))))
		case v.Op == ir.OpPrivatize:
			loop = append(loop, e.defineAs(v, "v", e.ref(v.Args[0])), noiseOn.Clone().Block(
				e.names[v].(*jen.Statement).Clone().Op("=").Id("nz").Dot("privatize").Call(e.ref(v.Args[0]), jen.Id("s").Dot("SigmaW"), e.ref(v.Args[1]), jen.Op("&").Id("cache"))))
		case v.Op == ir.OpLoad && v.Name == ir.GradName && g.fn.Noise != nil:
			loop = append(loop, e.define(v, "v"))
		case v.Op == ir.OpLoad && v.Name == ir.GradName:
			loop = append(loop, e.privatizedGrad(v, jen.Id("s").Dot("SigmaW"))...)
		case v.Op == ir.OpStore:
			loop = append(loop, jen.Id(bufName(v.Name)).Index(jen.Id("i")).Op("=").Add(g.narrowed(v.Name, e.ref(v.Args[0]))))
		case !v.Uniform:
			loop = append(loop, e.define(v, "v"))
		}
	}
	params := append([]jen.Code{jen.Id("theta"), jen.Id("g")}, g.stateParams()...)
	g.file.Comment("Step updates theta and the states in place, one coordinate at a time, with")
	g.file.Comment("the host scalars s of the current step and, if nz.On or nz.Secure, the DP noise nz")
	g.file.Comment("added to g. All buffers must have the same length.")
	body := []jen.Code{jen.Id("n").Op(":=").Len(jen.Id("theta")), g.lengthCheck("Step", params), jen.Var().Id("cache").Id("noiseCache")}
	for _, b := range ir.Buffers(g.fn) {
		if b.Storage.Stochastic {
			body = append(body, jen.Var().Id(roundingVar(b.Name)).Id("roundingGroup")) // its words, four elements a draw
		}
	}
	body = append(body, jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id("n"), jen.Id("i").Op("++")).Block(loop...))
	g.file.Func().Id("Step").Params(jen.Id("s").Id("Scalars"), jen.Id("nz").Id("Noise"), jen.List(params...).Index().Float32()).Block(body...)
}

// keyValue is one "key: value" element of a composite literal; unlike
// jen.Dict it keeps the order of the caller.
func keyValue(key string, value jen.Code) jen.Code {
	return jen.Line().Id(key).Op(":").Add(value)
}

// lengthCheck panics, naming the function fn, unless every buffer of
// params is n long.
func (g *generator) lengthCheck(fn string, params []jen.Code) jen.Code {
	var cond *jen.Statement
	for _, p := range params[1:] {
		c := jen.Len(p).Op("!=").Id("n")
		if cond == nil {
			cond = c
		} else {
			cond = cond.Op("||").Add(c)
		}
	}
	return jen.If(cond).Block(jen.Panic(jen.Lit(fmt.Sprintf("%s.%s: buffers differ in length", g.fn.Name, fn))))
}

// narrowed is x, the value stored into buffer name at element i of Step,
// narrowed to the buffer's storage (ir.Storage) as rng.Narrow does:
// stochastically with the rounding bits of nz's seed and step.
func (g *generator) narrowed(name string, x jen.Code) jen.Code {
	s := g.fn.StorageOf(name)
	if !s.Narrow() {
		return x
	}
	var bits jen.Code = jen.Lit(0)
	if s.Stochastic {
		buf := slices.IndexFunc(ir.Buffers(g.fn), func(b ir.Buffer) bool { return b.Name == name })
		bits = jen.Id(roundingVar(name)).Dot("bits").Call(jen.Id("nz").Dot("Seed"), jen.Id("nz").Dot("Step"), jen.Lit(buf), jen.Id("nz").Dot("Offset").Op("+").Uint64().Call(jen.Id("i")))
	}
	return roundCall(s, x, bits)
}

// roundingVar names Step's rounding words of the stochastic buffer name.
func roundingVar(name string) string { return "round_" + name }

// roundCall is the call of round.go (rng) that stores x as s and loads it
// back, stochastically by bits where s says so.
func roundCall(s ir.Storage, x, bits jen.Code) jen.Code {
	switch {
	case s.DType == lang.Float16:
		return jen.Id("f16Widen").Call(jen.Id("f16Round").Call(x, jen.Lit(s.Stochastic), bits))
	case s.Stochastic:
		return jen.Id("bf16Widen").Call(jen.Id("bf16Stochastic").Call(x, bits))
	}
	return jen.Id("bf16Widen").Call(jen.Id("bf16Nearest").Call(x))
}
