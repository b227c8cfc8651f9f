package gogen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// genReduce emits, for an optimizer whose step reads per-tensor
// reductions, Reduced and Host.Reduce: the Go reference of the kernels'
// reduction pass (<name>_reduce), which computes each term's chunk partials
// over one tensor with g privatized as Step privatizes it and finishes them
// in float64 in chunk order (Total).
func (g *generator) genReduce() {
	if g.fn.Reduce == nil {
		return
	}
	g.genCheckFinite()
	g.file.Comment("Reduced holds one tensor's reductions, the norms, sums, means, maxima and")
	g.file.Comment("minima the step reads (Host.Reduce): the total of each term (its float64")
	g.file.Comment("sum, its max or its min) and the tensor's size.")
	g.file.Type().Id("Reduced").Struct(
		jen.Id("Totals").Index().Float64().Comment(fmt.Sprintf("%v: %v", g.fn.ReduceTerms(), g.fn.ReduceCombineNames())),
		jen.Id("Numel").Int().Comment("the tensor's coordinates"),
	)
	e := g.newEnv()
	e.steady = true // NewHost solves the attenuations Reduce reads
	reads := func(op ir.Op) bool {
		return slices.ContainsFunc(g.fn.Reduce.Values, func(v *ir.Value) bool { return v.Op == op })
	}
	var body []jen.Code
	if reads(ir.OpScalar) {
		body = append(body, jen.Id("sc").Op(":=").Id("c").Dot("scalarsAt").Call(jen.Id("t"), jen.Id("sigmaW2")))
	}
	if reads(ir.OpHyper) {
		body = append(body, jen.Id("h").Op(":=").Id("c").Dot("h"))
	}
	body = append(body, e.hostPart(g.fn.Reduce)...)
	params := append([]jen.Code{jen.Id("theta"), jen.Id("g")}, g.stateParams()...)
	k := g.fn.NumReductions()
	body = append(body, jen.Id("n").Op(":=").Len(jen.Id("theta")), g.lengthCheck("Host.Reduce", params))
	if g.fn.ReduceReadsGradient() { // the noise Step adds, drawn as Step draws it
		body = append(body, jen.Id("sigmaW").Op(":=").Float32().Call(jen.Qual("math", "Sqrt").Call(jen.Id("sigmaW2"))),
			jen.Var().Id("cache").Id("noiseCache"))
	}
	body = append(body,
		jen.Var().Id("terms").Index(jen.Lit(k)).Index(jen.Id("ReduceChunk")).Float32(),
		jen.Id("partials").Op(":=").Make(jen.Index().Index().Float32(), jen.Lit(k)),
		jen.For(jen.Id("j").Op(":=").Range().Id("partials")).Block(
			jen.Id("partials").Index(jen.Id("j")).Op("=").Make(jen.Index().Float32(), jen.Id("ReduceChunks").Call(jen.Id("n")))),
		jen.For(jen.Id("ch").Op(":=").Range().Id("partials").Index(jen.Lit(0))).Block(append([]jen.Code{
			jen.List(jen.Id("lo"), jen.Id("hi")).Op(":=").Id("ch").Op("*").Id("ReduceChunk").Op(",").Min(jen.Parens(jen.Id("ch").Op("+").Lit(1)).Op("*").Id("ReduceChunk"), jen.Id("n")),
			jen.For(jen.Id("i").Op(":=").Id("lo"), jen.Id("i").Op("<").Id("hi"), jen.Id("i").Op("++")).Block(g.reduceLoop(e)...),
		}, g.chunkPartials()...)...),
		jen.Return(jen.Id("Reduced").Values(jen.Dict{jen.Id("Numel"): jen.Id("n"), jen.Id("Totals"): g.termTotals()})),
	)
	g.file.Comment("Reduce computes the reductions of step t (from 0) over one tensor, theta, g")
	g.file.Comment("and the states before the step, g with the DP noise nz added as Step adds it")
	g.file.Comment("(sigmaW2 its variance): the kernels' reduction pass, whose result Scalars")
	g.file.Comment("takes. All buffers must have the same length.")
	g.file.Func().Params(jen.Id("c").Op("*").Id("Host")).Id("Reduce").Params(jen.Id("t").Int(), jen.Id("sigmaW2").Float64(), jen.Id("nz").Id("Noise"),
		jen.List(params...).Index().Float32()).Id("Reduced").Block(body...)
}

// chunkPartials stores each term's partial over chunk ch: SumChunk for a
// sum, FoldChunk for a max or min.
func (g *generator) chunkPartials() []jen.Code {
	var out []jen.Code
	for j, op := range g.fn.ReduceCombines() {
		term := jen.Func().Params(jen.Id("i").Int()).Float32().Block(jen.Return(jen.Id("terms").Index(jen.Lit(j)).Index(jen.Id("i").Op("-").Id("lo"))))
		call := jen.Id("SumChunk").Call(jen.Id("ch"), jen.Id("n"), term)
		if op != lang.Add {
			id, combine := g.fold(op)
			call = jen.Id("FoldChunk").Call(jen.Id("ch"), jen.Id("n"), id, combine, term)
		}
		out = append(out, jen.Id("partials").Index(jen.Lit(j)).Index(jen.Id("ch")).Op("=").Add(call))
	}
	return out
}

// termTotals are the terms' totals from their partials: Total for a sum,
// FoldTotal for a max or min.
func (g *generator) termTotals() jen.Code {
	var out []jen.Code
	for j, op := range g.fn.ReduceCombines() {
		p := jen.Id("partials").Index(jen.Lit(j))
		if op == lang.Add {
			out = append(out, jen.Id("Total").Call(p))
			continue
		}
		id, combine := g.fold(op)
		out = append(out, jen.Id("FoldTotal").Call(p, id, combine))
	}
	return jen.Index().Float64().Values(out...)
}

// fold is a max's or min's identity and combine in the generated code
// (reduce.Fold), and asks for the helper it calls.
func (g *generator) fold(op lang.Op) (identity, combine jen.Code) {
	name := op.Name() + "Of"
	g.helpers[name] = true
	sign := -1
	if op == lang.Min {
		sign = 1
	}
	return jen.Float32().Call(jen.Qual("math", "Inf").Call(jen.Lit(sign))), jen.Id(name).Index(jen.Float32())
}

// privatizedGrad defines v, the load of g, with the DP noise nz of
// standard deviation sigmaW added where nz draws: g as Step and Reduce
// privatize it.
func (e *env) privatizedGrad(v *ir.Value, sigmaW jen.Code) []jen.Code {
	return []jen.Code{e.define(v, "v"), jen.If(jen.Id("nz").Dot("On").Op("||").Id("nz").Dot("Secure")).Block(
		e.names[v].(*jen.Statement).Clone().Op("=").Id("nz").Dot("add").Call(jen.Add(e.names[v]), sigmaW, jen.Id("i"), jen.Op("&").Id("cache")))}
}

// reduceLoop is the body of Reduce's per-coordinate loop: the reduce
// block's kernel part, g privatized, its stores writing terms[k][i-lo].
func (g *generator) reduceLoop(e *env) []jen.Code {
	var loop []jen.Code
	for _, v := range g.fn.Reduce.Values {
		switch {
		case v.Op == ir.OpLoad && v.Name == ir.GradName:
			loop = append(loop, e.privatizedGrad(v, jen.Id("sigmaW"))...)
		case v.Op == ir.OpStore:
			term := slices.Index(g.fn.ReduceTerms(), v.Name)
			loop = append(loop, jen.Id("terms").Index(jen.Lit(term)).Index(jen.Id("i").Op("-").Id("lo")).Op("=").Add(e.ref(v.Args[0])))
		case !v.Uniform:
			loop = append(loop, e.define(v, "v"))
		}
	}
	return loop
}
