package main

import (
	"fmt"
	"io"
	"os"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/pipeline"
)

// compileFile reads and compiles path. Diagnostics go to stderr (with
// carets); it returns nil if there were any.
func compileFile(path string, stderr io.Writer) *pipeline.Unit {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "fibergen: cannot read %s: %v\n", path, fileout.RootCause(err))
		return nil
	}
	u, errs, err := pipeline.Compile(path, src)
	switch {
	case len(errs) > 0:
		errs.Print(stderr, src)
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
	}
	return u
}
