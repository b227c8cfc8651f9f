// Package hostkernel loads the host (CPU) entry points of a generated
// optimizer from the shared object that fibergen build makes from
// generated/<name>/<name>.ll (package llvmgen, docs/kernels.md) — the step
// <name>_cpu (Kernel), the privatize phases (Privatize) and the
// diagnostics (Diagnostic) — with purego, without cgo, and calls them on Go
// slices. It is the one place that knows the C side of the host ABI: the
// structs the functions take mirror llvmgen's (a test holds them to LLVM's
// layout).
package hostkernel

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Range is the kernel's struct fibergen_range: the coordinates [Lo, Hi) of
// the buffers, whose coordinate 0 has global index Offset, and the noise of
// the step: Noise != 0 adds sqrt(sigma_w2)·z to g, z the Gaussian of
// (Seed, Step, global index).
type Range struct {
	Lo, Hi, Offset int64
	Seed           uint64
	Step, Noise    uint32
}

// Kernel is one loaded host function.
type Kernel struct {
	Name       string // the symbol, e.g. "fiber_cpu"
	NumBuffers int    // theta, g, then the states
	NumScalars int    // the step's host scalars, then sqrt(sigma_w2)
	lib, fn    uintptr
}

// Open loads the shared object at path and looks up symbol, or its AVX2
// twin symbol_avx2 where the CPU has AVX2 and the shared object exports it
// (the same operations, so the same bits; FIBERGEN_HOST_ISA=generic turns
// the preference off); numBuffers and numScalars describe its arguments
// (codegen/llvm: llvmgen.Module). Kernel.Name says which symbol runs.
func Open(path, symbol string, numBuffers, numScalars int) (*Kernel, error) {
	return openStep(path, symbol, numBuffers, numScalars, preferAVX2())
}

// preferAVX2 reports whether this CPU runs AVX2 code and the user did not
// ask for the generic host functions.
var preferAVX2 = sync.OnceValue(func() bool {
	if runtime.GOARCH != "amd64" || os.Getenv("FIBERGEN_HOST_ISA") == "generic" {
		return false
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && cpuHasAVX2(string(info))
})

// cpuHasAVX2 reports whether the flags of /proc/cpuinfo list everything
// x86-64-v3 needs.
func cpuHasAVX2(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		flags := map[string]bool{}
		for _, f := range strings.Fields(line) {
			flags[f] = true
		}
		for _, need := range []string{"avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "movbe", "abm"} {
			if !flags[need] {
				return false
			}
		}
		return true
	}
	return false
}

// OpenSymbol is Open without the AVX2 preference: it runs symbol itself.
func OpenSymbol(path, symbol string, numBuffers, numScalars int) (*Kernel, error) {
	return openStep(path, symbol, numBuffers, numScalars, false)
}

func openStep(path, symbol string, numBuffers, numScalars int, twin bool) (*Kernel, error) {
	if numBuffers < 2 || numScalars < 1 {
		return nil, fmt.Errorf("hostkernel: %s takes theta, g and the states, then the scalars and sqrt(sigma_w2): not %d buffers and %d scalars", symbol, numBuffers, numScalars)
	}
	f, err := load(path, symbol, twin)
	if err != nil {
		return nil, err
	}
	return &Kernel{Name: f.name, NumBuffers: numBuffers, NumScalars: numScalars, lib: f.lib, fn: f.fn}, nil
}

// loaded is an entry point looked up in a shared object, which it holds
// open: dlopen counts references, so every entry point closes its own.
type loaded struct {
	name    string // the symbol that runs
	lib, fn uintptr
}

// load opens the shared object at path and looks up symbol, or with twin
// its AVX2 twin symbol_avx2 where the shared object exports it.
func load(path, symbol string, twin bool) (loaded, error) {
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return loaded{}, fmt.Errorf("hostkernel: cannot load %s: %w", path, err)
	}
	if fn, err := purego.Dlsym(lib, symbol+"_avx2"); err == nil && twin {
		return loaded{symbol + "_avx2", lib, fn}, nil
	}
	fn, err := purego.Dlsym(lib, symbol)
	if err != nil {
		purego.Dlclose(lib)
		return loaded{}, fmt.Errorf("hostkernel: %s has no function %s (rebuild it with fibergen build): %w", path, symbol, err)
	}
	return loaded{symbol, lib, fn}, nil
}

// pointers pins the buffers and returns their addresses; an empty buffer
// is a null pointer.
func pointers(pin *runtime.Pinner, bufs [][]float32) []uintptr {
	ptrs := make([]uintptr, len(bufs))
	for i, b := range bufs {
		if len(b) > 0 {
			p := unsafe.SliceData(b)
			pin.Pin(p)
			ptrs[i] = uintptr(unsafe.Pointer(p))
		}
	}
	return ptrs
}

// ABI returns the ABI stamp the shared object exports as symbol (the
// module's <name>_abi: a NUL-terminated hex SHA-256), to compare with the
// manifest's.
func (k *Kernel) ABI(symbol string) (string, error) {
	addr, err := purego.Dlsym(k.lib, symbol)
	if err != nil {
		return "", fmt.Errorf("hostkernel: no ABI stamp %s: %w", symbol, err)
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	b := unsafe.Slice((*byte)(p), 64)
	return string(b), nil
}

// Close unloads the shared object; the Kernel must not be used after.
func (k *Kernel) Close() error {
	if k.lib == 0 {
		return nil
	}
	err := purego.Dlclose(k.lib)
	k.lib, k.fn = 0, 0
	return err
}

// Run steps the coordinates [r.Lo, r.Hi) of bufs in place. Every buffer
// must hold at least r.Hi values and no two may overlap.
func (k *Kernel) Run(bufs [][]float32, scalars []float32, r Range) error {
	if err := k.check(bufs, scalars, r); err != nil {
		return err
	}
	if r.Hi == r.Lo {
		return nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := pointers(&pin, bufs)
	rp := &Range{}
	*rp = r
	for _, p := range []any{&ptrs[0], &scalars[0], rp} {
		pin.Pin(p)
	}
	purego.SyscallN(k.fn, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&scalars[0])), uintptr(unsafe.Pointer(rp)))
	return nil
}

// check validates the arguments of Run.
func (k *Kernel) check(bufs [][]float32, scalars []float32, r Range) error {
	switch {
	case k.fn == 0:
		return errors.New("hostkernel: the kernel is closed")
	case len(bufs) != k.NumBuffers:
		return fmt.Errorf("hostkernel: %s takes %d buffers, got %d", k.Name, k.NumBuffers, len(bufs))
	case len(scalars) != k.NumScalars:
		return fmt.Errorf("hostkernel: %s takes %d scalars, got %d", k.Name, k.NumScalars, len(scalars))
	case r.Lo < 0 || r.Hi < r.Lo:
		return fmt.Errorf("hostkernel: bad range [%d, %d)", r.Lo, r.Hi)
	case r.Offset < 0 || r.Offset > (1<<62):
		return fmt.Errorf("hostkernel: offset %d out of range", r.Offset)
	}
	for i, b := range bufs {
		if int64(len(b)) < r.Hi {
			return fmt.Errorf("hostkernel: buffer %d holds %d values, the range ends at %d", i, len(b), r.Hi)
		}
	}
	return nil
}
