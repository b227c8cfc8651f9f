package pipeline

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/fibergen/fibergen/codegen/llvmgen"
)

// This file turns a unit's kernel module into what runs it — PTX for the
// GPU, a shared object for the CPU — with LLVM's tools (llvmgen.Toolchain),
// and lists the files fibergen build writes.

// PTX is u's kernels for NVIDIA GPUs (llvmgen.PTXTarget).
func (u *Unit) PTX() ([]byte, error) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return nil, err
	}
	return tc.PTX(u.Module.LL)
}

// WriteSharedObject builds u's host kernel for this machine at path.
func (u *Unit) WriteSharedObject(path string) error {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return err
	}
	return tc.SharedObject(u.Module.LL, u.Module.HostFunc(), path)
}

// CachedSharedObject returns u's host kernel in the user's cache directory
// ($XDG_CACHE_HOME/fibergen or ~/.cache/fibergen), named by a hash of the
// module, the LLVM version and the machine, building it on first use.
func (u *Unit) CachedSharedObject() (string, error) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return "", err
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(u.Module.LL + "\x00" + tc.Version + "\x00" + goruntime.GOOS + "/" + goruntime.GOARCH))
	so := filepath.Join(dir, fmt.Sprintf("%s-%x.so", u.Func.Name, sum[:12]))
	if _, err := os.Stat(so); err == nil {
		return so, nil
	}
	return so, tc.SharedObject(u.Module.LL, u.Module.HostFunc(), so)
}

// cacheDir is $XDG_CACHE_HOME/fibergen (or ~/.cache/fibergen), made if
// missing.
func cacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the host kernel: %w", err)
	}
	dir := filepath.Join(base, "fibergen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot make the kernel cache: %w", err)
	}
	return dir, nil
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

// sharedObjectBytes builds u's host kernel in a temporary directory and
// returns its bytes.
func (u *Unit) sharedObjectBytes() ([]byte, error) {
	dir, err := os.MkdirTemp("", "fibergen-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, u.Func.Name+".so")
	if err := u.WriteSharedObject(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
