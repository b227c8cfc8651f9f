package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/pipeline"
)

// compileFile reads and compiles path. Diagnostics go to stderr (with
// carets); it returns nil if there were any.
func compileFile(path string, stderr io.Writer) *pipeline.Unit {
	return diagnose(path, stderr, pipeline.Compile)
}

// checkFile is compileFile without code generation (pipeline.Check).
func checkFile(path string, stderr io.Writer) *pipeline.Unit {
	return diagnose(path, stderr, pipeline.Check)
}

// diagnose reads path and runs phases on it, printing its diagnostics to
// stderr; it returns nil if there were any.
func diagnose(path string, stderr io.Writer, phases phases) *pipeline.Unit {
	u, errs, text := compileDiagnosed(path, phases)
	if errs != nil {
		io.WriteString(stderr, text)
	}
	return u
}

// phases is pipeline.Compile or pipeline.Check.
type phases func(path string, src []byte) (*pipeline.Unit, dsl.ErrorList, error)

// compileDiagnosed reads and compiles spec, a file or a shipped
// optimizer's name (pipeline.ReadSource): the unit, or its errors one line
// each ("file:line:col: message") and in full as compileFile prints them.
func compileDiagnosed(spec string, phases phases) (u *pipeline.Unit, errs []string, text string) {
	path, src, err := pipeline.ReadSource(spec)
	if err != nil {
		msg := "fibergen: " + err.Error()
		return nil, []string{msg}, msg + "\n"
	}
	u, list, err := phases(path, src)
	switch {
	case len(list) > 0:
		var b strings.Builder
		list.Print(&b, src)
		for _, e := range list {
			errs = append(errs, e.Error())
		}
		return nil, errs, b.String()
	case err != nil:
		msg := fmt.Sprintf("%s: %v", path, err)
		return nil, []string{msg}, msg + "\n"
	}
	return u, nil, ""
}
