package gogen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/ir"
)

// genHost generates Scalars and Host: NewHost computes the host values that
// depend on the hypers alone once per hyper setting (attenuation among
// them), Scalars the rest at every step.
func (g *generator) genHost() {
	var fields []jen.Code
	for _, v := range g.scalars {
		fields = append(fields, jen.Id(g.names[v]).Float32().Comment(ir.ExprString(v)))
	}
	fields = append(fields, jen.Id("SigmaW").Float32().Comment("sqrt(sigma_w2): the standard deviation of the noise Step draws"))
	g.file.Comment("Scalars are the host scalars of one step: the uniform values Step reads.")
	g.file.Type().Id("Scalars").Struct(fields...)

	fixed, kept := g.fixedValues()
	hostFields := []jen.Code{jen.Id("h").Id("Hypers")}
	for _, v := range kept {
		hostFields = append(hostFields, jen.Id(fmt.Sprintf("u%d", v.ID)).Add(goType(v)).Comment(ir.ExprString(v)))
	}
	gains := g.finiteGains()
	for _, fl := range gains {
		hostFields = append(hostFields, jen.Id(gainField(fl.State)).Op("*").Id("finiteGain").Comment("attenuation_t("+fl.State+")"))
	}
	for _, s := range g.steadyGains() {
		hostFields = append(hostFields, jen.Id(steadyField(s)).Float64().Comment("attenuation("+s+")"))
	}
	if len(g.fn.Scalars) > 0 {
		hostFields = append(hostFields,
			jen.Id("scal").Index().Float64().Comment("the scalars "+strings.Join(g.fn.Scalars, ", ")+" at step scalT and noise variance scalSigma (scalarsAt)"),
			jen.Id("scalT").Int(), jen.Id("scalSigma").Float64())
	}
	g.file.Comment("Host computes the host scalars for one hyper setting: the values that depend")
	g.file.Comment("on the hypers alone once, in NewHost, the others at every step. It is not")
	g.file.Comment("safe for concurrent use: attenuation_t keeps a running sum.")
	g.file.Type().Id("Host").Struct(hostFields...)
	g.genNewHost(fixed, kept, gains)
	g.genScalarsMethod(fixed, kept)
	g.file.Comment("Hypers returns the hypers the host was made for.")
	g.file.Func().Params(jen.Id("c").Op("*").Id("Host")).Id("Hypers").Params().Id("Hypers").Block(jen.Return(jen.Id("c").Dot("h")))
}

// fixedValues splits the step's host part: fixed are the values that do
// not change from step to step, kept those of them that Scalars reads.
func (g *generator) fixedValues() (fixed map[*ir.Value]bool, kept []*ir.Value) {
	fixed = map[*ir.Value]bool{}
	isScalar := map[*ir.Value]bool{}
	for _, v := range g.scalars {
		isScalar[v] = true
	}
	needed := map[*ir.Value]bool{}
	for _, v := range g.fn.Step.Values {
		if !hostValue(v) {
			continue
		}
		if ir.DependsOnStep(v) {
			for _, a := range v.Args {
				needed[a] = true
			}
			continue
		}
		fixed[v] = true
	}
	for _, v := range g.fn.Step.Values {
		if fixed[v] && (needed[v] || isScalar[v]) {
			kept = append(kept, v)
		}
	}
	return fixed, kept
}

func hostValue(v *ir.Value) bool { return v.Uniform && v.Op != ir.OpStore && !v.IsConst() }

func goType(v *ir.Value) jen.Code {
	if v.Type == ir.F32 {
		return jen.Float32()
	}
	return jen.Float64()
}

func gainField(state string) string { return "gain" + exportedName(state) }

func steadyField(state string) string { return "steady" + exportedName(state) }

// steadyGainOf is the Go expression solving attenuation(state) at hypers h.
func steadyGainOf(state string) jen.Code {
	return jen.Id("steadyGain").Call(jen.Id(filterFunc(state)).Call(jen.Id("h")))
}

// steadyGains lists the states whose attenuation scalarStep or Reduce
// reads, which run every step: NewHost solves each once.
func (g *generator) steadyGains() []string {
	var out []string
	for _, b := range []*ir.Block{g.fn.ScalarStep, g.fn.Reduce} {
		if b == nil {
			continue
		}
		for _, v := range b.Values {
			if v.Op == ir.OpAtten && !slices.Contains(out, v.Name) {
				out = append(out, v.Name)
			}
		}
	}
	return out
}

func filterFunc(state string) string { return "filter" + exportedName(state) }

// finiteGains lists the filters attenuation_t reads.
func (g *generator) finiteGains() []*ir.Filter {
	var out []*ir.Filter
	host := g.hostValues()
	for _, fl := range g.fn.Filters {
		if slices.ContainsFunc(host, func(v *ir.Value) bool { return v.Op == ir.OpAttenT && v.Name == fl.State }) {
			out = append(out, fl)
		}
	}
	return out
}

func (g *generator) genNewHost(fixed map[*ir.Value]bool, kept []*ir.Value, gains []*ir.Filter) {
	e := g.newEnv()
	body := []jen.Code{
		jen.If(jen.Err().Op(":=").Id("h").Dot("Validate").Call(), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("c").Op(":=").Op("&").Id("Host").Values(jen.Id("h").Op(":").Id("h")),
	}
	for _, v := range g.fn.Step.Values {
		if fixed[v] {
			body = append(body, e.define(v, "u"))
		}
	}
	for _, v := range kept {
		body = append(body, jen.Id("c").Dot(fmt.Sprintf("u%d", v.ID)).Op("=").Add(e.ref(v)))
	}
	for _, fl := range gains {
		body = append(body, jen.Id("c").Dot(gainField(fl.State)).Op("=").Id("newFiniteGain").Call(jen.Id(filterFunc(fl.State)).Call(jen.Id("h"))))
	}
	for _, s := range g.steadyGains() {
		body = append(body, jen.Id("c").Dot(steadyField(s)).Op("=").Add(steadyGainOf(s)))
	}
	body = append(body, jen.Return(jen.Id("c"), jen.Nil()))
	g.file.Comment("NewHost checks h (Validate) and computes the host values that depend on the")
	g.file.Comment("hypers alone.")
	g.file.Func().Id("NewHost").Params(jen.Id("h").Id("Hypers")).Params(jen.Op("*").Id("Host"), jen.Error()).Block(body...)
}

func (g *generator) genScalarsMethod(fixed map[*ir.Value]bool, kept []*ir.Value) {
	e := g.newEnv()
	for _, v := range kept {
		e.names[v] = jen.Id("c").Dot(fmt.Sprintf("u%d", v.ID))
	}
	used := map[*ir.Value]bool{}
	for _, v := range g.fn.Step.Values {
		if v.Op != ir.OpAttenT { // its operand is t, which it reads itself
			for _, a := range v.Args {
				used[a] = true
			}
		}
	}
	var body []jen.Code
	for _, v := range g.fn.Step.Values {
		if hostValue(v) && !fixed[v] && used[v] {
			body = append(body, e.define(v, "u"))
		}
	}
	if slices.ContainsFunc(g.fn.Step.Values, func(v *ir.Value) bool { return v.Op == ir.OpScalar }) {
		body = append([]jen.Code{jen.Id("sc").Op(":=").Id("c").Dot("scalarsAt").Call(jen.Id("t"), jen.Id("sigmaW2"))}, body...)
	}
	var values []jen.Code
	for _, v := range g.scalars {
		values = append(values, keyValue(g.names[v], e.ref(v)))
	}
	values = append(values, keyValue("SigmaW", jen.Float32().Call(jen.Qual("math", "Sqrt").Call(jen.Id("sigmaW2")))))
	body = append(body, jen.Return(jen.Id("Scalars").Values(append(values, jen.Line())...)))
	params := []jen.Code{jen.Id("t").Int(), jen.Id("sigmaW2").Float64()}
	g.file.Comment("Scalars computes the host scalars of step t (from 0) with the DP noise")
	if g.fn.Reduce != nil {
		params = append(params, jen.Id("r").Id("Reduced"))
		g.file.Comment("variance per coordinate sigmaW2, for the tensor whose reductions are r")
		g.file.Comment("(Host.Reduce).")
	} else {
		g.file.Comment("variance per coordinate sigmaW2.")
	}
	g.file.Func().Params(jen.Id("c").Op("*").Id("Host")).Id("Scalars").Params(params...).Id("Scalars").Block(body...)
}

// genScalarRecursion generates, for an optimizer with scalars, scalarInit
// and scalarStep from the IR's scalar blocks and Host.scalarsAt, which
// advances them to a step (ir.Func.Scalars: a function of the hypers,
// sigma_w2 and t).
func (g *generator) genScalarRecursion() {
	if len(g.fn.Scalars) == 0 {
		return
	}
	names := strings.Join(g.fn.Scalars, ", ")
	g.file.Commentf("scalarInit returns the scalars %s before step 0.", names)
	g.file.Func().Id("scalarInit").Params(jen.Id("h").Id("Hypers")).Index().Float64().Block(g.scalarBlock(g.fn.ScalarInit, false)...)
	g.file.Commentf("scalarStep returns the scalars %s at step t from sc, their values at step t-1,", names)
	g.file.Comment("for the hypers of c and the noise variance sigmaW2.")
	step := g.scalarBlock(g.fn.ScalarStep, true)
	if slices.ContainsFunc(g.fn.ScalarStep.Values, func(v *ir.Value) bool { return v.Op == ir.OpHyper }) {
		step = append([]jen.Code{jen.Id("h").Op(":=").Id("c").Dot("h")}, step...)
	}
	g.file.Func().Id("scalarStep").Params(jen.Id("c").Op("*").Id("Host"), jen.Id("t").Int(), jen.Id("sigmaW2").Float64(), jen.Id("sc").Index().Float64()).Index().Float64().Block(step...)
	c := jen.Id("c")
	g.file.Comment("scalarsAt returns the scalars at step t for the noise variance sigmaW2,")
	g.file.Comment("advancing them from the last step asked for, or from their initial values for")
	g.file.Comment("an earlier step or another noise variance.")
	g.file.Func().Params(c.Clone().Op("*").Id("Host")).Id("scalarsAt").Params(jen.Id("t").Int(), jen.Id("sigmaW2").Float64()).Index().Float64().Block(
		jen.If(c.Clone().Dot("scal").Op("==").Nil().Op("||").Id("t").Op("<").Add(c.Clone().Dot("scalT")).Op("||").
			Qual("math", "Float64bits").Call(jen.Id("sigmaW2")).Op("!=").Qual("math", "Float64bits").Call(c.Clone().Dot("scalSigma"))).Block(
			jen.List(c.Clone().Dot("scal"), c.Clone().Dot("scalT"), c.Clone().Dot("scalSigma")).Op("=").
				List(jen.Id("scalarInit").Call(c.Clone().Dot("h")), jen.Lit(-1), jen.Id("sigmaW2"))),
		jen.For(c.Clone().Dot("scalT").Op("<").Id("t")).Block(
			c.Clone().Dot("scalT").Op("++"),
			c.Clone().Dot("scal").Op("=").Id("scalarStep").Call(c.Clone(), c.Clone().Dot("scalT"), jen.Id("sigmaW2"), c.Clone().Dot("scal"))),
		jen.Return(c.Clone().Dot("scal")),
	)
}

// scalarBlock is the body of a function computing a scalar block: its
// values, then the stored ones in Func.Scalars order; steady: reading
// attenuation(s) from the Host (scalarStep).
func (g *generator) scalarBlock(b *ir.Block, steady bool) []jen.Code {
	e := g.newEnv()
	e.steady = steady
	body := e.hostPart(b)
	stored := map[string]jen.Code{}
	for _, s := range b.Stores() {
		stored[s.Name] = e.ref(s.Args[0])
	}
	var out []jen.Code
	for _, name := range g.fn.Scalars {
		out = append(out, stored[name])
	}
	return append(body, jen.Return(jen.Index().Float64().Values(out...)))
}

// genFilters generates one function per filter returning its model at
// hypers h and checkFilters, which Validate calls (spliceGains brings the
// functions of package gain they call).
func (g *generator) genFilters() {
	var checks []jen.Code
	for _, fl := range g.fn.Filters {
		g.genFilter(fl)
		checks = append(checks, g.stabilityCheck(fl)...)
	}
	checks = append(checks, jen.Return(jen.Nil()))
	g.file.Comment("checkFilters reports a filter that is not stable at hypers h.")
	g.file.Func().Params(jen.Id("h").Id("Hypers")).Id("checkFilters").Params().Error().Block(checks...)
}

// genFilter generates the function returning fl's model at hypers h, in the
// arguments of the gain functions: M and b, and the index of the state.
func (g *generator) genFilter(fl *ir.Filter) {
	g.genModelFunc(fl, filterFunc(fl.State), "at hypers h: z_t = M z_{t-1} + b w_t", jen.Id("h").Id("Hypers"))
}

// genModelFunc generates the function name(params) returning fl's model
// (which it is, as its comment says), as genFilter's.
func (g *generator) genModelFunc(fl *ir.Filter, name, which string, params ...jen.Code) {
	e := g.newEnv()
	body := e.hostPart(fl.Model)
	var entries []jen.Code
	for _, s := range fl.Model.Stores() {
		entries = append(entries, e.ref(s.Args[0]))
	}
	k := len(fl.States)
	body = append(body, jen.Return(jen.Index().Float64().Values(entries[:k*k]...), jen.Index().Float64().Values(entries[k*k:]...), jen.Lit(fl.Target)))
	g.file.Commentf("%s returns the noise model of state %s %s", name, fl.State, which)
	g.file.Commentf("with z = (%s), M %d×%d row major, and the index of %s in z.", strings.Join(fl.States, ", "), k, k, fl.State)
	results := []jen.Code{jen.List(jen.Id("m"), jen.Id("b")).Index().Float64(), jen.Id("target").Int()}
	g.file.Func().Id(name).Params(params...).Params(results...).Block(body...)
}

// settingFormat is a format for the hypers block b reads, "name=%v, ...",
// with their fields in h as arguments (ir.Func.SettingOf).
func (g *generator) settingFormat(b *ir.Block) (string, []jen.Code) {
	var names []string
	var args []jen.Code
	for _, h := range g.fn.Hypers {
		for _, v := range b.Values {
			if v.Op == ir.OpHyper && v.Name == h.Name {
				names = append(names, h.Name+"=%v")
				args = append(args, jen.Id("h").Dot(exportedName(h.Name)))
				break
			}
		}
	}
	if len(names) == 0 {
		return ir.EverySetting, nil
	}
	return strings.Join(names, ", "), args
}

// stabilityCheck is the check of one filter, with the message of
// ir.Func.CheckStability.
func (g *generator) stabilityCheck(fl *ir.Filter) []jen.Code {
	setting, args := g.settingFormat(fl.Model)
	msg := fl.UnstableFormat(setting)
	m, rho := jen.Id("m"+exportedName(fl.State)), jen.Id("rho")
	return []jen.Code{
		jen.List(m, jen.Id("_"), jen.Id("_")).Op(":=").Id(filterFunc(fl.State)).Call(jen.Id("h")),
		jen.If(rho.Clone().Op(":=").Id("feedingRadius").Call(m, jen.Lit(len(fl.States)), jen.Lit(fl.Target)), jen.Op("!").Parens(stableCond(fl, rho))).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(append(append([]jen.Code{jen.Lit(msg)}, args...), rho.Clone())...))),
	}
}

// stableCond is the condition on the spectral radius rho under which fl
// is stable (ir.Filter.Stable).
func stableCond(fl *ir.Filter, rho *jen.Statement) *jen.Statement {
	if fl.Bounded {
		return rho.Clone().Op("<=").Lit(ir.MaxBoundedRadius)
	}
	return rho.Clone().Op("<").Lit(1)
}

// spliceGains splices the functions of package gain that the generated
// code calls: FeedingRadius (checkFilters, checkVarying), SteadyGain for the
// attenuation solved numerically, NewFiniteGain for attenuation_t.
func (g *generator) spliceGains() {
	roots := []string{"FeedingRadius"}
	if g.stepUses(ir.OpAtten) {
		roots = append(roots, "SteadyGain")
	}
	if g.stepUses(ir.OpAttenT) {
		roots = append(roots, "NewFiniteGain")
	}
	g.splice(gainFile, roots...)
}

// stepUses says whether the step, the host block or the reduce block has
// a value of op.
func (g *generator) stepUses(op ir.Op) bool {
	return slices.ContainsFunc(g.hostValues(), func(v *ir.Value) bool { return v.Op == op })
}

// hostValues lists the values of the step, of the host block (the scalar
// step) and of the reduce block.
func (g *generator) hostValues() []*ir.Value {
	out := g.fn.Step.Values
	for _, b := range []*ir.Block{g.fn.ScalarStep, g.fn.Reduce} {
		if b != nil {
			out = slices.Concat(out, b.Values)
		}
	}
	return out
}
