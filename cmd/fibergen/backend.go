package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	llvmgen "github.com/fibergen/fibergen/codegen/llvm"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// newEngine returns the engine of backend for u: "go", the IR interpreter
// (bit-identical with the generated Go package), or "cpu", the host kernel
// that LLVM builds from u's module. close releases what the engine holds.
func newEngine(backend string, u *pipeline.Unit, e interp.Engine) (eng runtime.Engine, close func(), err error) {
	if backend == "go" {
		return e, func() {}, nil
	}
	k, err := loadHostKernel(u.Module)
	if err != nil {
		return nil, nil, fmt.Errorf("--backend cpu: %v", err)
	}
	return &cpuEngine{Engine: e, k: k}, func() { k.Close() }, nil
}

// loadHostKernel loads the host function of k from hostKernelFile.
func loadHostKernel(k *llvmgen.Module) (*hostkernel.Kernel, error) {
	so, err := hostKernelFile(k)
	if err != nil {
		return nil, err
	}
	return hostkernel.Open(so, k.HostFunc(), len(k.Buffers), len(k.Scalars))
}

// hostKernelFile returns the shared object of k that LLVM builds into the
// user's cache directory, named by a hash of the module, the LLVM version
// and the machine, so that it is built once.
func hostKernelFile(k *llvmgen.Module) (string, error) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return "", err
	}
	dir, err := kernelCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(k.LL + "\x00" + tc.Version + "\x00" + goruntime.GOOS + "/" + goruntime.GOARCH))
	so := filepath.Join(dir, fmt.Sprintf("%s-%x.so", k.Name, sum[:12]))
	if _, err := os.Stat(so); err != nil {
		if err := tc.SharedObject(k.LL, k.HostFunc(), so); err != nil {
			return "", err
		}
	}
	return so, nil
}

// kernelCacheDir is $XDG_CACHE_HOME/fibergen (or ~/.cache/fibergen), made
// if missing.
func kernelCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the host kernel: %v", err)
	}
	dir := filepath.Join(base, "fibergen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot make the kernel cache %s: %v", dir, rootCause(err))
	}
	return dir, nil
}

// cpuEngine runs the host kernel; the interpreter computes the host scalars
// and initializes the states.
type cpuEngine struct {
	interp.Engine
	k *hostkernel.Kernel
}

// Step runs step t through the host kernel; it does not change g.
func (c *cpuEngine) Step(t int, sigmaW2 float64, theta, g []float32, states [][]float32) error {
	if err := rng.CheckStep(t); err != nil {
		return err
	}
	vals := c.P.KernelScalars(c.P.HostScalars(c.Hypers, t, sigmaW2), sigmaW2)
	rg := hostkernel.Range{Hi: int64(len(theta)), Seed: c.Seed, Step: uint32(t)}
	if c.Noise {
		rg.Noise = 1
	}
	return c.k.Run(append([][]float32{theta, g}, states...), vals, rg)
}
