package gogen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/reduce"
)

// genDiagnostics emits, for each declared diagnostic, the function that
// computes its chunk partials, e.g. ClampMass; Ratio (package reduce's core,
// genPrivatize) turns them into its value.
func (g *generator) genDiagnostics() {
	if len(g.fn.Diags) == 0 {
		return
	}
	for _, d := range g.fn.Diags {
		g.genDiagnostic(d)
	}
}

// genDiagnostic emits the partials function of d: a loop over the chunks
// of ReduceChunk coordinates that computes d's block per coordinate into the
// term arrays and sums each chunk with SumChunk.
func (g *generator) genDiagnostic(d *ir.Diagnostic) {
	idx, err := d.ScalarIndexes(g.fn)
	if err != nil {
		g.fail("%v", err)
		return
	}
	e := g.newEnv()
	for i, v := range ir.HostScalars(d.Block) {
		e.names[v] = jen.Id("s").Dot(g.names[g.scalars[idx[i]]])
	}
	loop := g.diagLoop(e, d)
	var params []jen.Code
	for _, s := range d.Reads(g.fn) {
		params = append(params, jen.Id(localName(s)))
	}
	name := exportedName(d.Kind)
	first := jen.Id(localName(d.Reads(g.fn)[0]))
	g.file.Commentf("%s computes the chunk partials of the %s diagnostic, `diagnostic %s(%s)`,", name, d.Kind, d.Kind, strings.Join(d.Args, ", "))
	g.file.Comment("from the states after a step and that step's host scalars s: for chunk c of")
	g.file.Commentf("%d coordinates, num[c] sums eq(%s, floor)·|%s| and den[c] sums |%s|, in the", reduce.ReduceChunk, d.Args[1], d.Args[0], d.Args[0])
	g.file.Comment("kernels' order (SumChunk). len(num) and len(den) must be ReduceChunks(n);")
	g.file.Comment("the value is Ratio(num, den).")
	g.file.Func().Id(name).Params(jen.Id("s").Id("Scalars"), jen.List(params...).Index().Float32(), jen.List(jen.Id("num"), jen.Id("den")).Index().Float32()).Block(
		jen.Id("n").Op(":=").Len(first),
		g.diagLengthCheck(name, params),
		jen.Var().List(jen.Id("tn"), jen.Id("td")).Index(jen.Id("ReduceChunk")).Float32(),
		jen.For(jen.Id("c").Op(":=").Range().Id("num")).Block(
			jen.List(jen.Id("lo"), jen.Id("hi")).Op(":=").Id("c").Op("*").Id("ReduceChunk").Op(",").Min(jen.Parens(jen.Id("c").Op("+").Lit(1)).Op("*").Id("ReduceChunk"), jen.Id("n")),
			jen.For(jen.Id("i").Op(":=").Id("lo"), jen.Id("i").Op("<").Id("hi"), jen.Id("i").Op("++")).Block(loop...),
			jen.Id("num").Index(jen.Id("c")).Op("=").Id("SumChunk").Call(jen.Id("c"), jen.Id("n"), termOf("tn")),
			jen.Id("den").Index(jen.Id("c")).Op("=").Id("SumChunk").Call(jen.Id("c"), jen.Id("n"), termOf("td")),
		),
	)
}

// diagLoop is the body of the per-coordinate loop: d's kernel part, its
// stores writing the term arrays tn (num) and td (den) at i-lo.
func (g *generator) diagLoop(e *env, d *ir.Diagnostic) []jen.Code {
	var loop []jen.Code
	for _, v := range d.Block.Values {
		switch {
		case v.Op == ir.OpStore:
			arr := map[string]string{"num": "tn", "den": "td"}[v.Name]
			loop = append(loop, jen.Id(arr).Index(jen.Id("i").Op("-").Id("lo")).Op("=").Add(e.ref(v.Args[0])))
		case !v.Uniform:
			loop = append(loop, e.define(v, "v"))
		}
	}
	return loop
}

func (g *generator) diagLengthCheck(name string, params []jen.Code) jen.Code {
	cond := jen.Len(jen.Id("num")).Op("!=").Id("ReduceChunks").Call(jen.Id("n")).Op("||").Len(jen.Id("den")).Op("!=").Len(jen.Id("num"))
	for _, p := range params[1:] {
		cond = cond.Op("||").Len(p).Op("!=").Id("n")
	}
	return jen.If(cond).Block(jen.Panic(jen.Lit(fmt.Sprintf("%s.%s: buffers differ in length or the partials do not fit", g.fn.Name, name))))
}

// termOf is the term function of SumChunk that reads the chunk's term
// array arr: func(i int) float32 { return arr[i-lo] }.
func termOf(arr string) jen.Code {
	return jen.Func().Params(jen.Id("i").Int()).Float32().Block(jen.Return(jen.Id(arr).Index(jen.Id("i").Op("-").Id("lo"))))
}
