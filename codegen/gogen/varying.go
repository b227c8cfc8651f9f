package gogen

import (
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
)

// genVaryingCheck emits Host.checkVarying, the check of the time-varying
// filters (ir.Func.Varying) before every step that
// interp.Program.CheckVarying is, with its message, and the function of
// each filter's model at a step; nothing for an optimizer without one.
func (g *generator) genVaryingCheck() {
	if len(g.fn.Varying) == 0 {
		return
	}
	sc := jen.Id("sc")
	body := []jen.Code{jen.Id("h").Op(":=").Id("c").Dot("h"), jen.Var().Add(sc.Clone()).Index().Float64().Comment("no scalars")}
	if len(g.fn.Scalars) > 0 {
		body[1] = sc.Clone().Op(":=").Id("c").Dot("scalarsAt").Call(jen.Id("t"), jen.Id("sigmaW2"))
	}
	for _, fl := range g.fn.Varying {
		g.genVaryingFilter(fl)
		body = append(body, g.varyingCheck(fl))
	}
	body = append(body, jen.Return(jen.Nil()))
	g.file.Comment("checkVarying reports a time-varying filter that grows at step t: the")
	g.file.Comment("spectral radius of its transition there, from the coefficients the hypers,")
	g.file.Comment("t and the scalars at t give it, above 1.")
	g.file.Func().Params(jen.Id("c").Op("*").Id("Host")).Id("checkVarying").Params(jen.Id("t").Int(), jen.Id("sigmaW2").Float64()).Error().Block(body...)
}

// varyingFilterFunc names the function of a time-varying filter's model.
func varyingFilterFunc(state string) string { return "varyingFilter" + exportedName(state) }

// genVaryingFilter generates the function returning fl's model at hypers
// h, step t, noise variance sigmaW2 and the scalars sc at t, as genFilter's.
func (g *generator) genVaryingFilter(fl *ir.Filter) {
	g.genModelFunc(fl, varyingFilterFunc(fl.State), "at step t: z_t = M_t z_{t-1} + b_t w_t",
		jen.Id("h").Id("Hypers"), jen.Id("t").Int(), jen.Id("sigmaW2").Float64(), jen.Id("sc").Index().Float64())
}

// varyingCheck is the check of one time-varying filter at step t.
func (g *generator) varyingCheck(fl *ir.Filter) jen.Code {
	setting, args := g.varyingSetting(fl)
	m, rho := jen.Id("m"+exportedName(fl.State)), jen.Id("rho")
	return jen.Add(
		jen.List(m, jen.Id("_"), jen.Id("_")).Op(":=").Id(varyingFilterFunc(fl.State)).Call(jen.Id("h"), jen.Id("t"), jen.Id("sigmaW2"), jen.Id("sc")), jen.Line(),
		jen.If(rho.Clone().Op(":=").Id("feedingRadius").Call(m.Clone(), jen.Lit(len(fl.States)), jen.Lit(fl.Target)), jen.Op("!").Parens(stableCond(fl, rho))).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(ir.UnstableStepFormat(fl.State, fl.Stability)), jen.Id("t"), settingText(setting, args), rho.Clone()))))
}

// settingText is the setting's text from its format and arguments.
func settingText(format string, args []jen.Code) jen.Code {
	if len(args) == 0 {
		return jen.Lit(format)
	}
	return jen.Qual("fmt", "Sprintf").Call(append([]jen.Code{jen.Lit(format)}, args...)...)
}

// varyingSetting is the format of the setting an unstable step reports
// (interp's varyingSetting): the hypers fl's model reads, then the scalars
// it reads, "name=%v" each, with their values as arguments.
func (g *generator) varyingSetting(fl *ir.Filter) (string, []jen.Code) {
	var parts []string
	var args []jen.Code
	if hypers, hargs := g.settingFormat(fl.Model); hypers != ir.EverySetting {
		parts, args = append(parts, hypers), hargs
	}
	for i, name := range g.fn.Scalars {
		if fl.Model.ReadsScalar(name) {
			parts = append(parts, name+"=%v")
			args = append(args, jen.Id("sc").Index(jen.Lit(i)))
		}
	}
	return strings.Join(parts, ", "), args
}
