// Package pipeline runs fibergen's phases on one .dsl source in the order
// `fibergen build` does — parse and check (dsl), lower and optimize (lower, ir),
// generate code (its Targets: codegen/gogen, codegen/llvmgen) — so that the
// command line and the tests build exactly the same thing from one parse. Turning the kernel
// module into PTX or a shared object needs LLVM's tools (llvmgen.Toolchain):
// Unit's PTX, CachedSharedObject and Files do it, once per user (the cache
// of compiled objects, package objcache).
package pipeline

import (
	"errors"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/lower"
)

// Unit is one compiled .dsl file.
type Unit struct {
	Path      string
	Src       []byte
	File      *dsl.File
	Canonical []byte          // dsl.Format(File)
	Warnings  dsl.ErrorList   // legal but likely mistakes (dsl.Info.Warnings)
	Func      *ir.Func        // optimized
	Noise     *noise.Analysis // of the step as lowered (lower.Lower)
	Manifest  []byte          // generated/<name>/<name>.json (package manifest)
	// Outputs are the targets' outputs (Targets), in order.
	Outputs []Output
	// The built-in targets' results, typed, for the callers that use them
	// directly: the Go reference package and the kernels' LLVM module
	// (whose PTX and host kernel Unit's PTX and CachedSharedObject build).
	GoCode []byte
	Module *llvmgen.Module
}

// Check runs the phases up to the optimized IR — parse and check, lower
// and optimize, the checks at the default hypers — without generating
// code: what `fibergen check` reports, in time and memory that grow with
// the source. Its Unit has no Outputs, GoCode, Module or Manifest.
func Check(path string, src []byte) (*Unit, dsl.ErrorList, error) {
	f, info, errs := dsl.Parse(path, src)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	u := &Unit{Path: path, Src: src, File: f, Canonical: dsl.Format(f), Warnings: info.Warnings}
	var err error
	if u.Func, u.Noise, err = lower.Build(f, info); err != nil {
		if el := (dsl.ErrorList{}); errors.As(err, &el) {
			return nil, el, nil
		}
		return nil, nil, err
	}
	return u, nil, nil
}

// Compile builds src, read from path. A non-empty ErrorList holds the
// positioned diagnostics of the source; err is a failure after checking (a
// name that Go cannot take, or a bug in fibergen).
func Compile(path string, src []byte) (*Unit, dsl.ErrorList, error) {
	return CompileFor(path, src, ir.Storage{})
}

// CompileFor is Compile for parameters stored as params (ir.SetParamStorage;
// the zero Storage is float32): a model in bfloat16 needs kernels that load
// and store its bfloat16 values.
func CompileFor(path string, src []byte, params ir.Storage) (*Unit, dsl.ErrorList, error) {
	u, errs, err := Check(path, src)
	if u == nil {
		return nil, errs, err
	}
	if err := u.Func.SetParamStorage(params); err != nil {
		return nil, nil, err
	}
	if u.NoKernels() { // no target compiles line states yet (lines.go)
		return u, nil, u.manifestAlone()
	}
	if err := u.generate(Targets); err != nil {
		return nil, nil, err
	}
	return u, nil, nil
}
