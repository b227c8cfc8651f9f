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
	if g.fn.HyperDefaults != nil {
		fields = append(fields, jen.Id("set").Index(jen.Lit(len(g.fn.Hypers))).Bool().Comment("the hypers Set has set: a derived default no longer follows them"))
	}
	f.Comment("Hypers holds the hyperparameters; the zero value is not meaningful, start from Defaults.")
	f.Type().Id("Hypers").Struct(fields...)
	g.genDefaults()
	g.genSet()
	g.genDerive()
}

// genDerive emits derive, which recomputes every derived hyper (a default
// written as an expression of earlier hypers) that Set has not set, in
// declaration order, as ir.Func.Derive does.
func (g *generator) genDerive() {
	if g.fn.HyperDefaults == nil {
		return
	}
	var body []jen.Code
	for _, s := range g.fn.HyperDefaults.Stores() {
		i := g.fn.HyperIndex(s.Name)
		body = append(body, jen.If(jen.Op("!").Id("h").Dot("set").Index(jen.Lit(i))).Block(
			jen.Id("h").Dot(exportedName(s.Name)).Op("=").Add(g.newEnv().tree(s.Args[0]))))
	}
	g.file.Comment("derive recomputes the derived hypers that Set has not set from the hypers")
	g.file.Comment("before them: " + strings.Join(g.fn.DerivedHypers(), ", ") + ".")
	g.file.Func().Params(jen.Id("h").Op("*").Id("Hypers")).Id("derive").Params().Block(body...)
}

func hyperDoc(h ir.Hyper) string {
	s := fmt.Sprintf("%s, default %s", h.Name, ir.FormatConst(h.Default, ir.F64))
	if h.Range != nil {
		s += ", in " + h.Range.String()
	}
	return s
}

func (g *generator) genDefaults() {
	var values []jen.Code
	for _, h := range g.fn.Hypers {
		values = append(values, keyValue(exportedName(h.Name), float64Lit(h.Default)))
	}
	g.file.Comment("Defaults returns the defaults declared in the DSL.")
	g.file.Func().Id("Defaults").Params().Id("Hypers").Block(jen.Return(jen.Id("Hypers").Values(append(values, jen.Line())...)))
}

// genSet generates hyperField, the table of hypers with their ranges, and
// Set and Validate, which walk it.
func (g *generator) genSet() {
	f := g.file
	f.Comment("hyperField is one hyper: its DSL name, its field and its range.")
	f.Type().Id("hyperField").Struct(
		jen.Id("name").String(),
		jen.Id("ptr").Op("*").Float64(),
		jen.List(jen.Id("lo"), jen.Id("hi")).Float64(),
		jen.List(jen.Id("loOpen"), jen.Id("hiOpen")).Bool(),
		jen.Id("text").String().Comment("the range as written in the DSL"),
	)
	var rows []jen.Code
	for _, h := range g.fn.Hypers {
		rows = append(rows, jen.Line().Add(hyperRow(h)))
	}
	f.Comment("fields lists the hypers of h in declaration order.")
	f.Func().Params(jen.Id("h").Op("*").Id("Hypers")).Id("fields").Params().Index().Id("hyperField").Block(
		jen.Return(jen.Index().Id("hyperField").Values(append(rows, jen.Line())...)))
	g.genSetMethod()
	g.genValidate()
	g.genCheck()
}

// hyperRow is the hyperField literal of h.
func hyperRow(h ir.Hyper) jen.Code {
	lo, hi, loOpen, hiOpen, text := math.Inf(-1), math.Inf(1), true, true, "(-inf, inf)"
	if r := h.Range; r != nil {
		lo, hi, loOpen, hiOpen, text = r.Lo, r.Hi, r.LoOpen, r.HiOpen, r.String()
	}
	return jen.Values(jen.Lit(h.Name), jen.Op("&").Id("h").Dot(exportedName(h.Name)), float64Lit(lo), float64Lit(hi), jen.Lit(loOpen), jen.Lit(hiOpen), jen.Lit(text))
}

func (g *generator) genSetMethod() {
	field := jen.Id("f")
	set := []jen.Code{jen.Op("*").Add(field).Dot("ptr").Op("=").Id("value")}
	index := jen.Id("_")
	if g.fn.HyperDefaults != nil {
		index = jen.Id("i")
		set = append(set, jen.Id("h").Dot("set").Index(jen.Id("i")).Op("=").True(), jen.Id("h").Dot("derive").Call())
		g.file.Comment("Set overrides the hyper with the given DSL name, checking its range; the")
		g.file.Comment("derived hypers that Set has not set follow it (derive).")
	} else {
		g.file.Comment("Set overrides the hyper with the given DSL name, checking its range.")
	}
	g.file.Func().Params(jen.Id("h").Op("*").Id("Hypers")).Id("Set").Params(jen.Id("name").String(), jen.Id("value").Float64()).Error().Block(
		jen.For(jen.List(index, field).Op(":=").Range().Id("h").Dot("fields").Call()).Block(
			jen.If(jen.Add(field).Dot("name").Op("==").Id("name")).Block(
				append(append([]jen.Code{
					jen.If(jen.Err().Op(":=").Add(field).Dot("check").Call(jen.Id("value")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))},
					set...), jen.Return(jen.Nil()))...,
			),
		),
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(g.fn.Name+" has no hyper %s (its hypers: "+strings.Join(g.fn.HyperNames(), ", ")+")"), jen.Id("name"))),
	)
}

func (g *generator) genValidate() {
	field := jen.Id("f")
	result := jen.Return(jen.Nil())
	g.file.Comment("Validate checks every hyper against its range.")
	if len(g.fn.Filters) > 0 {
		result = jen.Return(jen.Id("h").Dot("checkFilters").Call())
		g.file.Comment("It also checks that the filter of every state that attenuation or")
		g.file.Comment("attenuation_t names is stable: spectral radius below 1.")
	}
	g.file.Func().Params(jen.Id("h").Id("Hypers")).Id("Validate").Params().Error().Block(
		jen.For(jen.List(jen.Id("_"), field).Op(":=").Range().Id("h").Dot("fields").Call()).Block(
			jen.If(jen.Err().Op(":=").Add(field).Dot("check").Call(jen.Op("*").Add(field).Dot("ptr")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		),
		result,
	)
}

// genCheck emits hyperField.check: finite and inside the range, which
// lang.InRange, spliced after it, decides.
func (g *generator) genCheck() {
	f, x := jen.Id("f"), jen.Id("x")
	g.file.Comment("check reports a value that is not finite or lies outside the hyper's range.")
	g.file.Func().Params(jen.Id("f").Id("hyperField")).Id("check").Params(jen.Id("x").Float64()).Error().Block(
		jen.If(jen.Qual("math", "IsNaN").Call(x).Op("||").Qual("math", "IsInf").Call(x, jen.Lit(0))).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("hyper %s = %v: value must be finite"), jen.Add(f).Dot("name"), x))),
		jen.If(jen.Op("!").Id("inRange").Call(x, jen.Add(f).Dot("lo"), jen.Add(f).Dot("hi"), jen.Add(f).Dot("loOpen"), jen.Add(f).Dot("hiOpen"))).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("hyper %s = %v is outside its range %s"), jen.Add(f).Dot("name"), x, jen.Add(f).Dot("text")))),
		jen.Return(jen.Nil()),
	)
	g.splice(rangeFile, "InRange")
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
