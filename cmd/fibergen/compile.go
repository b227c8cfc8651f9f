package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fibergen/fibergen/codegen/go"
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
)

// unit is one compiled .dsl file.
type unit struct {
	path  string
	src   []byte
	fn    *ir.Func
	goSrc []byte // the generated Go package
}

// compileFile reads, compiles and generates code for path. Diagnostics go
// to stderr (with carets); it returns nil if there were any.
func compileFile(path string, stderr io.Writer) *unit {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "fibergen: %v\n", cleanPathError(err))
		return nil
	}
	fn, errs, err := ir.Compile(path, src)
	if len(errs) > 0 {
		errs.Print(stderr, src)
		return nil
	}
	if err == nil {
		var goSrc []byte
		goSrc, err = gogen.Generate(fn, gogen.Options{Source: filepath.Base(path), DSL: canonical(path, src)})
		if err == nil {
			return &unit{path: path, src: src, fn: fn, goSrc: goSrc}
		}
	}
	fmt.Fprintf(stderr, "%s: %v\n", path, err)
	return nil
}

// canonical is the source in dsl.Format form.
func canonical(path string, src []byte) []byte {
	f, _ := dsl.ParseFile(path, src)
	return dsl.Format(f)
}

// cleanPathError shortens *os.PathError messages to "open X: reason".
func cleanPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("cannot read %s: %v", pe.Path, pe.Err)
	}
	return err
}
