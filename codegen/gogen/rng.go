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
	"(docs/noise.md), exactly as the generated kernels do; with Secure (On or not),",
	"z is the secure scheme's draw under Key (" + rng.SecureVersion + ")",
	"and g + s.SigmaW·z is snapped to its grid. With neither, g is taken as",
	"privatized already. The same (Seed or Key, Step, element) always gives the",
	"same draw, so a shard [Offset, Offset+n) of a larger buffer draws what the",
	"whole buffer would there. Never run two steps with the same key and Step.",
}

// genNoise emits Noise, its add method and fibergen's noise generators, package rng's
// core, secure core and the glue that adds a draw in either scheme.
func (g *generator) genNoise() {
	for _, line := range noiseDoc {
		g.file.Comment(line)
	}
	g.file.Type().Id("Noise").Struct(
		jen.Id("On").Bool(),
		jen.Id("Secure").Bool(),
		jen.Id("Seed").Uint64(),
		jen.Id("Key").Index(jen.Lit(4)).Uint64(),
		jen.Id("Step").Uint32(),
		jen.Id("Offset").Uint64().Comment("the global index of the buffers' first element"),
	)
	g.genNoiseAdd()
	if g.fn.Noise != nil {
		g.genNoiseDraw()
	}
	g.splice(rngCore)
	g.splice(rngSecure)
	g.splice(rngDraw)
	if len(g.fn.NarrowBuffers()) > 0 {
		g.splice(rngRound)
	}
}

// genNoiseAdd emits Noise.add, the generated package's glue around rng's addNoise.
func (g *generator) genNoiseAdd() {
	nz := jen.Id("nz")
	g.file.Comment("add returns x plus the noise of element i of the buffers.")
	g.file.Func().Params(nz.Clone().Id("Noise")).Id("add").Params(jen.List(jen.Id("x"), jen.Id("sigma")).Float32(), jen.Id("i").Int(), jen.Id("c").Op("*").Id("noiseCache")).Float32().Block(
		jen.Return(jen.Id("addNoise").Call(nz.Clone().Dot("Secure"), nz.Clone().Dot("Seed"), nz.Clone().Dot("Key"), nz.Clone().Dot("Step"),
			nz.Clone().Dot("Offset").Op("+").Uint64().Call(jen.Id("i")), jen.Id("x"), jen.Id("sigma"), jen.Id("c"))),
	)
}

// genNoiseDraw emits Noise.draw and Noise.privatize, the glue around rng's drawNoise and
// privatizeNoise that the step of a noise block calls: z drawn, then g + sigma·w.
func (g *generator) genNoiseDraw() {
	nz := jen.Id("nz")
	g.file.Comment("draw returns z, the standard normal draw of element i of the buffers.")
	g.file.Func().Params(nz.Clone().Id("Noise")).Id("draw").Params(jen.Id("sigma").Float32(), jen.Id("i").Int(), jen.Id("c").Op("*").Id("noiseCache")).Float32().Block(
		jen.Return(jen.Id("drawNoise").Call(nz.Clone().Dot("Secure"), nz.Clone().Dot("Seed"), nz.Clone().Dot("Key"), nz.Clone().Dot("Step"),
			nz.Clone().Dot("Offset").Op("+").Uint64().Call(jen.Id("i")), jen.Id("sigma"), jen.Id("c"))),
	)
	g.file.Comment("privatize returns x + sigma·w in the scheme of nz (snapped when secure).")
	g.file.Func().Params(nz.Clone().Id("Noise")).Id("privatize").Params(jen.List(jen.Id("x"), jen.Id("sigma"), jen.Id("w")).Float32(), jen.Id("c").Op("*").Id("noiseCache")).Float32().Block(
		jen.Return(jen.Id("privatizeNoise").Call(nz.Clone().Dot("Secure"), jen.Id("x"), jen.Id("sigma"), jen.Id("w"), jen.Id("c"))),
	)
}
