package gogen

import (
	"fmt"
	"math"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
)

func (g *generator) genHypers() {
	f := g.file
	f.Comment("Name is the optimizer's name.")
	f.Const().Id("Name").Op("=").Lit(g.fn.Name)
	var fields []jen.Code
	for _, h := range g.fn.Hypers {
		fields = append(fields, jen.Id(exportedName(h.Name)).Float64().Comment(hyperDoc(h)))
	}
	f.Comment("Hypers holds the hyperparameters; the zero value is not meaningful, start from Defaults.")
	f.Type().Id("Hypers").Struct(fields...)
	g.genDefaults()
	g.genSet()
	g.genValidate()
}

func hyperDoc(h ir.Hyper) string {
	s := fmt.Sprintf("%s, default %s", h.Name, ir.FormatConst(h.Default, ir.F64))
	if h.Range != nil {
		s += ", in " + h.Range.String()
	}
	return s
}

func (g *generator) genDefaults() {
	d := jen.Dict{}
	for _, h := range g.fn.Hypers {
		d[jen.Id(exportedName(h.Name))] = float64Lit(h.Default)
	}
	g.file.Comment("Defaults returns the defaults declared in the DSL.")
	g.file.Func().Id("Defaults").Params().Id("Hypers").Block(jen.Return(jen.Id("Hypers").Values(d)))
}

// genSet generates Set, which overrides a hyper by its DSL name.
func (g *generator) genSet() {
	var cases []jen.Code
	for _, h := range g.fn.Hypers {
		cases = append(cases, jen.Case(jen.Lit(h.Name)).Block(
			jen.If(jen.Err().Op(":=").Add(rangeCheck(h, jen.Id("value"))), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Id("h").Dot(exportedName(h.Name)).Op("=").Id("value"),
			jen.Return(jen.Nil()),
		))
	}
	g.file.Comment("Set overrides the hyper with the given DSL name, checking its range.")
	g.file.Func().Params(jen.Id("h").Op("*").Id("Hypers")).Id("Set").Params(jen.Id("name").String(), jen.Id("value").Float64()).Error().Block(
		jen.Switch(jen.Id("name")).Block(cases...),
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(g.fn.Name+" has no hyper %s (its hypers: "+strings.Join(g.fn.HyperNames(), ", ")+")"), jen.Id("name"))),
	)
}

func (g *generator) genValidate() {
	var body []jen.Code
	for _, h := range g.fn.Hypers {
		body = append(body, jen.If(jen.Err().Op(":=").Add(rangeCheck(h, jen.Id("h").Dot(exportedName(h.Name)))), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
	}
	body = append(body, jen.Return(jen.Nil()))
	g.file.Comment("Validate checks every hyper against its range.")
	g.file.Func().Params(jen.Id("h").Id("Hypers")).Id("Validate").Params().Error().Block(body...)
	g.helpers["checkRange"] = true
}

// rangeCheck calls checkRange(name, x, lo, loOpen, hi, hiOpen).
func rangeCheck(h ir.Hyper, x jen.Code) *jen.Statement {
	lo, hi, loOpen, hiOpen, text := math.Inf(-1), math.Inf(1), true, true, "(-inf, inf)"
	if r := h.Range; r != nil {
		lo, hi, loOpen, hiOpen, text = r.Lo, r.Hi, r.LoOpen, r.HiOpen, r.String()
	}
	return jen.Id("checkRange").Call(jen.Lit(h.Name), x, float64Lit(lo), jen.Lit(loOpen), float64Lit(hi), jen.Lit(hiOpen), jen.Lit(text))
}

// float64Lit is a float64 literal; infinities and NaN go through math.
func float64Lit(x float64) jen.Code {
	switch {
	case math.IsInf(x, 1):
		return jen.Qual("math", "Inf").Call(jen.Lit(1))
	case math.IsInf(x, -1):
		return jen.Qual("math", "Inf").Call(jen.Lit(-1))
	case math.IsNaN(x):
		return jen.Qual("math", "NaN").Call()
	}
	return jen.Lit(x)
}

// float32Lit is a float32 literal, exact to the bit.
func float32Lit(x float64) jen.Code {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return jen.Float32().Call(float64Lit(x))
	}
	return jen.Lit(float32(x))
}
