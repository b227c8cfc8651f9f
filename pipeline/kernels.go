package pipeline

import (
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/internal/objcache"
	"github.com/fibergen/fibergen/ir"
)

// This file turns a unit's kernel module into what runs it — PTX for the
// GPU, a shared object for the CPU — with LLVM's tools (llvmgen.Toolchain),
// each compiled once per user into the cache of compiled objects (package
// objcache), keyed by the module and the toolchain's recipe; and it lists
// the files fibergen build writes.

// PTX is u's kernels for NVIDIA GPUs (llvmgen.PTXTarget), from the cache.
func (u *Unit) PTX() ([]byte, error) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return nil, err
	}
	dir, _, err := objcache.Entry("ptx", objcache.Key(tc.Recipe("ptx"), u.Module.LL), func(dir string) error {
		ptx, err := tc.PTX(u.Module.LL)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "kernel.ptx"), ptx, 0o644)
	})
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, "kernel.ptx"))
}

// CachedSharedObject returns the path of u's host kernel for this machine
// in the cache, building it on first use.
func (u *Unit) CachedSharedObject() (string, error) {
	return CachedSharedObject(u.Func.Name, u.Module.LL, u.Module.HostFunc())
}

// CachedSharedObject returns the path of the host kernel hostFunc of the
// optimizer name's module ll (LLVM IR) in the cache, building it on first
// use.
func CachedSharedObject(name, ll, hostFunc string) (string, error) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return "", err
	}
	so := name + ".so"
	dir, _, err := objcache.Entry("so", objcache.Key(tc.Recipe("so"), ll, hostFunc, so), func(dir string) error {
		return tc.SharedObject(ll, hostFunc, filepath.Join(dir, so))
	})
	return filepath.Join(dir, so), err
}

// File is one file fibergen build writes into generated/<name>/.
type File struct {
	Name string // e.g. "fiber.ptx"
	Data []byte
}

// Files are the files of u that fibergen build writes: each target's
// (Targets: the Go reference package; the kernel module, its PTX and the
// host kernel built for this machine), then the manifest.
func (u *Unit) Files() ([]File, error) {
	var files []File
	for _, o := range u.Outputs {
		fs, err := o.Files()
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return append(files, File{u.Func.Name + ".json", u.Manifest}), nil
}

// StreamObject returns the path of the STREAM kernels' shared object for
// this machine (llvmgen.StreamModule), the baseline of fibergen bench, in
// the cache, building it on first use.
func StreamObject() (string, error) {
	return CachedSharedObject("fibergen_stream", llvmgen.StreamModule(goruntime.GOARCH), ir.StreamCopySymbol)
}

// sharedObjectBytes is u's host kernel, from the cache.
func (u *Unit) sharedObjectBytes() ([]byte, error) {
	path, err := u.CachedSharedObject()
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
