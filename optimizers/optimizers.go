// Package optimizers holds the optimizers fibergen ships as DSL source,
// embedded in every program that links it (fibergen, libfibergen.so), so
// that each compiles by its name from any directory: "dp_adamw" is
// optimizers/dp_adamw.dsl (pipeline.Resolve, fibergen build dp_adamw).
package optimizers

import (
	"embed"
	"io/fs"
	"path"
	"strings"
)

//go:embed *.dsl
var sources embed.FS

// Source returns the source of the shipped optimizer name and the path
// its diagnostics name, optimizers/NAME.dsl; ok is false if fibergen
// ships no optimizer of that name.
func Source(name string) (file string, src []byte, ok bool) {
	if !fs.ValidPath(name) || strings.ContainsAny(name, "/.") {
		return "", nil, false
	}
	src, err := sources.ReadFile(name + ".dsl")
	if err != nil {
		return "", nil, false
	}
	return path.Join("optimizers", name+".dsl"), src, true
}

// Names lists the shipped optimizers' names, sorted.
func Names() []string {
	files, _ := fs.Glob(sources, "*.dsl")
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(f, ".dsl")
	}
	return names
}
