package gogen

// genPrivatize emits the privatize functions (per-example clipping; see
// docs/kernels.md, "Privatize"), which every generated package has: the Go
// reference of the kernels' <name>_privatize_* entry points.
func (g *generator) genPrivatize() {
	g.genReduce()
	g.genHelperFile("privatize")
}

// genReduce emits reduceChunk, the Go reference of the kernels' chunked
// reduction order (codegen/cuda's reduce.go), once.
func (g *generator) genReduce() {
	if !g.helpers["reduce"] {
		g.helpers["reduce"] = true
		g.genHelperFile("reduce")
	}
}

// genHelperFile emits helpers/<name>.go.txt.
func (g *generator) genHelperFile(name string) {
	src, err := helperFiles.ReadFile("helpers/" + name + ".go.txt")
	if err != nil {
		g.fail("helper %s: %v", name, err)
		return
	}
	g.file.Add(rawCode(string(src)))
}
