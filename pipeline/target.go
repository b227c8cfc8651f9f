package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fibergen/fibergen/codegen/gogen"
	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/manifest"
)

// A Target is one code generator of fibergen build. What it needs from the
// IR is the unit's optimized ir.Func (Unit.Func: the step, the init, the
// observation, the diagnostics, the noise site; the buffers and scalars in
// the ABI order of ir/abi.go), and the source for its comments; what it
// gives back is an Output: the entry points it adds to the manifest and the
// files it emits into generated/<name>/. A new backend is one Target, added
// to Targets, plus one runtime package that implements
// runtime/backend.Backend on what the target emits (docs/runtime.md,
// "Adding a backend").
type Target interface {
	// Name names the target in errors, e.g. "go" or "llvm".
	Name() string
	// Generate generates u's code from u.Func. It runs no external tool:
	// Output.Files does, where the target needs one.
	Generate(u *Unit) (Output, error)
}

// An Output is what a Target generated for one unit.
type Output interface {
	// Kernels are the kernels' entry points the output adds to the
	// manifest, nil where it adds none. One target at most gives them.
	Kernels() *manifest.Kernels
	// Files are the files fibergen build writes for the output, in
	// order; making them may run external tools (LLVM's).
	Files() ([]File, error)
	// Inputs are what Files are made from, without making them: the
	// generated text and the recipe of every tool that runs on it. The
	// cache of optimizers opened by name is keyed by them (Resolve).
	Inputs() ([]string, error)
}

// Targets are the code generators Compile runs, in order: the Go
// reference package, then the LLVM module with the PTX and the host
// kernel built from it.
var Targets = []Target{goTarget{}, llvmTarget{}}

// generate runs every target on u, fills the typed fields of the built-in
// ones (GoCode, Module) and encodes the manifest with the kernels the
// targets give.
func (u *Unit) generate(targets []Target) error {
	var kernels *manifest.Kernels
	var from string
	for _, t := range targets {
		out, err := t.Generate(u)
		if err != nil {
			return err
		}
		if k := out.Kernels(); k != nil {
			if kernels != nil {
				return fmt.Errorf("pipeline: targets %s and %s both give the manifest's kernels", from, t.Name())
			}
			kernels, from = k, t.Name()
		}
		u.Outputs = append(u.Outputs, out)
	}
	if kernels == nil {
		return errors.New("pipeline: no target gives the manifest's kernels")
	}
	m, err := manifest.New(u.Func, u.Path, u.Src, *kernels)
	if err != nil {
		return err
	}
	u.Manifest, err = m.Encode()
	return err
}

// goTarget is the Go reference package, <name>.go (package gogen).
type goTarget struct{}

func (goTarget) Name() string { return "go" }

func (goTarget) Generate(u *Unit) (Output, error) {
	code, err := gogen.Generate(u.Func, gogen.Options{Source: filepath.Base(u.Path), DSL: u.Canonical})
	if err != nil {
		return nil, err
	}
	u.GoCode = code
	return goOutput{name: u.Func.Name, code: code}, nil
}

type goOutput struct {
	name string
	code []byte
}

// Kernels is nil: the runtime runs the reference from the manifest's IR,
// or the package's own StepKernel (runtime.OpenPackage).
func (goOutput) Kernels() *manifest.Kernels { return nil }

func (o goOutput) Files() ([]File, error) { return []File{{o.name + ".go", o.code}}, nil }

func (o goOutput) Inputs() ([]string, error) { return []string{"go", string(o.code)}, nil }

// llvmTarget is the kernels' LLVM module, <name>.ll (package llvmgen),
// with the PTX for NVIDIA GPUs and the host kernel for this machine that
// LLVM's tools build from it.
type llvmTarget struct{}

func (llvmTarget) Name() string { return "llvm" }

func (llvmTarget) Generate(u *Unit) (Output, error) {
	m, err := llvmgen.Generate(u.Func)
	if err != nil {
		return nil, err
	}
	u.Module = m
	return llvmOutput{u: u}, nil
}

type llvmOutput struct{ u *Unit }

func (o llvmOutput) Kernels() *manifest.Kernels { return &o.u.Module.Kernels }

// Inputs are the module and the recipes of its PTX and host kernel.
func (o llvmOutput) Inputs() ([]string, error) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return nil, err
	}
	return []string{"llvm", o.u.Module.LL, tc.Recipe("ptx"), tc.Recipe("so")}, nil
}

// Files are the module, its PTX and the host kernel, the PTX and the host
// kernel's variants compiled at once, each by its own LLVM processes.
func (o llvmOutput) Files() ([]File, error) {
	var ptx []byte
	var ptxErr error
	var wg sync.WaitGroup
	wg.Go(func() { ptx, ptxErr = o.u.PTX() })
	so, soErr := o.u.sharedObjectBytes()
	wg.Wait()
	if err := errors.Join(ptxErr, soErr); err != nil {
		return nil, err
	}
	name := o.u.Func.Name
	return []File{{name + ".ll", []byte(o.u.Module.LL)}, {name + ".ptx", ptx}, {name + ".so", so}}, nil
}
