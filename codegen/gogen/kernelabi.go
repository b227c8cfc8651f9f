package gogen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/rng"
)

// genKernelABI emits what runtime.OpenPackage needs to run the package
// without a kernel file: the embedded manifest and StepKernel, Step behind
// the kernels' ABI.
func (g *generator) genKernelABI() {
	name := g.fn.Name
	g.file.Anon("embed")
	g.file.Comment("//go:embed " + name + ".json")
	g.file.Var().Id("manifestJSON").Index().Byte()
	g.file.Comment(fmt.Sprintf("Manifest returns the optimizer's manifest, %s.json: the kernels' ABI", name))
	g.file.Comment("(package manifest), for runtime.OpenPackage.")
	g.file.Func().Id("Manifest").Params().Index().Byte().Block(jen.Return(jen.Id("manifestJSON")))

	var fields []jen.Code
	for i, v := range g.scalars {
		fields = append(fields, keyValue(g.names[v], jen.Id("scalars").Index(jen.Lit(i))))
	}
	fields = append(fields, keyValue("SigmaW", jen.Id("scalars").Index(jen.Lit(ir.SigmaWScalar(len(g.scalars)+1)))))
	args := []jen.Code{jen.Id("s"), jen.Id("nz")}
	for i := range ir.FirstState + len(g.fn.States) {
		args = append(args, jen.Id("bufs").Index(jen.Lit(i)).Index(jen.Id("lo").Op(":").Id("hi")))
	}
	nz := jen.Id("Noise").Values(jen.Dict{jen.Id("On"): jen.Id("mode").Op("!=").Lit(0), jen.Id("Secure"): jen.Id("mode").Op("==").Lit(int(rng.Secure)),
		jen.Id("Seed"): jen.Id("seed"), jen.Id("Key"): jen.Id("key"),
		jen.Id("Step"): jen.Id("step"), jen.Id("Offset"): jen.Id("offset").Op("+").Uint64().Call(jen.Id("lo"))})
	g.file.Comment("StepKernel is Step with the arguments of the kernels' host function: the")
	g.file.Comment("coordinates [lo, hi) of bufs (theta, g, then the states), the kernel's")
	g.file.Comment("scalars (the fields of Scalars in order), the global index of bufs[*][0]")
	g.file.Comment("and the noise (mode: 0 none, 1 Philox under seed, 2 the secure scheme")
	g.file.Comment("under key; any other: nothing is written, as the kernels do);")
	g.file.Comment("runtime.OpenPackage calls it on every core.")
	g.file.Func().Id("StepKernel").Params(
		jen.Id("bufs").Index().Index().Float32(), jen.Id("scalars").Index().Float32(), jen.List(jen.Id("lo"), jen.Id("hi")).Int(),
		jen.Id("offset").Uint64(), jen.Id("mode").Uint32(), jen.Id("seed").Uint64(), jen.Id("key").Index(jen.Lit(4)).Uint64(), jen.Id("step").Uint32(),
	).Block(
		jen.If(jen.Id("mode").Op(">").Lit(int(rng.Secure))).Block(jen.Return()),
		jen.Id("s").Op(":=").Id("Scalars").Values(append(fields, jen.Line())...),
		jen.Id("nz").Op(":=").Add(nz),
		jen.Id("Step").Call(args...),
	)
}
