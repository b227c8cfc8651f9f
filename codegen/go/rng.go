package gogen

import (
	"strings"

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

// genNoise emits Noise, its draw method and fibergen's noise generator.
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
	g.file.Add(rawCode(noiseDraw))
	g.file.Add(rawCode(coreSource(rng.CoreSource)))
}

// noiseDraw draws one element's Gaussian through the group of four that
// shares its Philox call.
const noiseDraw = `
// noiseCache keeps the Gaussians of the last group of four elements drawn.
type noiseCache struct {
	group uint64
	z     [4]float32
	ok    bool
}

// draw returns the Gaussian of element i of the buffers.
func (nz Noise) draw(i int, c *noiseCache) float32 {
	e := nz.Offset + uint64(i)
	if !c.ok || c.group != e>>2 {
		c.group, c.z, c.ok = e>>2, gaussian4(nz.Seed, nz.Step, 0, e>>2), true
	}
	return c.z[e&3]
}
`

// coreSource is the source of a package's core.go (rng's, reduce's)
// without its package clause and imports: the generated package carries its
// own copy.
func coreSource(src string) string {
	if i := strings.Index(src, "\nimport "); i >= 0 {
		src = src[i+1:]
		if strings.HasPrefix(src, "import (") {
			src = src[strings.Index(src, ")")+1:]
		} else {
			src = src[strings.Index(src, "\n")+1:]
		}
	}
	return "\n" + strings.TrimLeft(src, "\n")
}
