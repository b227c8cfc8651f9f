package gogen

import (
	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/rng"
)

// noiseDoc documents the generated Noise type.
var noiseDoc = []string{
	"Noise says whether Step draws the DP noise itself, and which: with On, Step",
	"adds s.SigmaW·z to g[i], z the standard Gaussian of global element Offset+i",
	"at step Step under Seed, noise site 0, in fibergen's scheme " + rng.Version,
	"(docs/noise.md), exactly as the generated kernels do; without On, g is taken",
	"as privatized already. The same (Seed, Step, element) always gives the same",
	"draw, so a shard [Offset, Offset+n) of a larger buffer draws what the whole",
	"buffer would there. Never run two steps with the same Seed and Step.",
}

// genNoise emits Noise, its draw method and fibergen's noise generator,
// package rng's core.
func (g *generator) genNoise() {
	for _, line := range noiseDoc {
		g.file.Comment(line)
	}
	g.file.Type().Id("Noise").Struct(
		jen.Id("On").Bool(),
		jen.Id("Seed").Uint64(),
		jen.Id("Step").Uint32(),
		jen.Id("Offset").Uint64().Comment("the global index of the buffers' first element"),
	)
	g.genNoiseDraw()
	g.splice(rngCore)
}

// genNoiseDraw emits noiseCache and Noise.draw, which draws one element's
// Gaussian through the group of four that shares its Philox call. They are
// the generated package's glue around rng's gaussian4 (a method of the
// generated Noise), not reference numerics, so jennifer writes them.
func (g *generator) genNoiseDraw() {
	c, e, nz := jen.Id("c"), jen.Id("e"), jen.Id("nz")
	g.file.Comment("noiseCache keeps the Gaussians of the last group of four elements drawn.")
	g.file.Type().Id("noiseCache").Struct(
		jen.Id("group").Uint64(),
		jen.Id("z").Index(jen.Lit(4)).Float32(),
		jen.Id("ok").Bool(),
	)
	group := e.Clone().Op(">>").Lit(2)
	g.file.Comment("draw returns the Gaussian of element i of the buffers.")
	g.file.Func().Params(nz.Clone().Id("Noise")).Id("draw").Params(jen.Id("i").Int(), c.Clone().Op("*").Id("noiseCache")).Float32().Block(
		e.Clone().Op(":=").Add(nz).Dot("Offset").Op("+").Uint64().Call(jen.Id("i")),
		jen.If(jen.Op("!").Add(c).Dot("ok").Op("||").Add(c).Dot("group").Op("!=").Add(group)).Block(
			jen.List(c.Clone().Dot("group"), c.Clone().Dot("z"), c.Clone().Dot("ok")).Op("=").List(
				group, jen.Id("gaussian4").Call(nz.Clone().Dot("Seed"), nz.Clone().Dot("Step"), jen.Lit(0), group), jen.True()),
		),
		jen.Return(c.Clone().Dot("z").Index(e.Clone().Op("&").Lit(3))),
	)
}
