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
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/backend"
)

// Range is the kernel's struct fibergen_range: the coordinates [Lo, Hi) of
// the buffers, whose coordinate 0 has global index Offset, and the noise of
// the step: Noise is its rng.Mode — 1 adds sqrt(sigma_w2)·z to g, z the
// Gaussian of (Seed, Step, global index); 2 the secure scheme's, under Key,
// snapped to its grid; 0 none.
type Range struct {
	Lo, Hi, Offset int64
	Seed           uint64
	Step, Noise    uint32
	Key            [4]uint64
}

// Kernel is one loaded host function.
type Kernel struct{ entry }

// entry is a loaded host function that takes the step's buffers and
// scalars: the step (Kernel) or a diagnostic (Diagnostic).
type entry struct {
	Name       string // the symbol that runs, e.g. "fiber_cpu_avx512"
	NumBuffers int    // theta, g, then the states
	NumScalars int    // the step's host scalars, then sqrt(sigma_w2)
	lib, fn    uintptr
}

// openEntry loads symbol's variant isa (OpenISA) from the shared object at
// path, for numBuffers buffers and numScalars scalars.
func openEntry(path, symbol, isa string, numBuffers, numScalars int) (entry, error) {
	if numBuffers < ir.FirstState || numScalars < 1 {
		return entry{}, fmt.Errorf("hostkernel: %s takes theta, g and the states, then the scalars and sqrt(sigma_w2): not %d buffers and %d scalars", symbol, numBuffers, numScalars)
	}
	f, err := load(path, symbol, isa)
	return entry{Name: f.name, NumBuffers: numBuffers, NumScalars: numScalars, lib: f.lib, fn: f.fn}, err
}

// Close unloads the shared object; the entry point must not be used after.
func (e *entry) Close() error {
	if e.lib == 0 {
		return nil
	}
	err := purego.Dlclose(e.lib)
	e.lib, e.fn = 0, 0
	return err
}

// Open loads the shared object at path and looks up symbol in the variant
// chosen for this CPU (Choice) — e.g. symbol_avx512 on a CPU with
// AVX-512, symbol itself for the generic one; the variants perform the
// same operations, so they compute the same bits.
// numBuffers and numScalars describe its arguments (codegen/llvmgen:
// llvmgen.Module). Kernel.Name says which symbol runs.
func Open(path, symbol string, numBuffers, numScalars int) (*Kernel, error) {
	return OpenISA(path, symbol, "", numBuffers, numScalars)
}

// OpenISA is Open for the variant named isa ("generic", "avx2",
// "avx512"), which this CPU must run; "" picks as Open does.
func OpenISA(path, symbol, isa string, numBuffers, numScalars int) (*Kernel, error) {
	e, err := openEntry(path, symbol, isa, numBuffers, numScalars)
	if err != nil {
		return nil, err
	}
	return &Kernel{e}, nil
}

// ISAs returns the names of the variants of the host functions this CPU
// runs, the best first: the one Choice chose (the widest whose features
// CPUID reports, or the one FIBERGEN_HOST_ISA=generic|avx2|avx512
// forces), down to "generic". An unknown FIBERGEN_HOST_ISA, or one that
// names a variant this CPU cannot run, is an error.
func ISAs() ([]string, error) {
	c, err := choice()
	return c.Runnable(), err
}

// Choice is the variant the host functions run on this CPU and why each
// variant was chosen or not (hostisa.Choose), decided once per process
// and value of FIBERGEN_HOST_ISA (a test forces each variant in turn).
func Choice() (hostisa.Choice, error) { return choice() }

// chosen is one decision of choice.
type chosen struct {
	c   hostisa.Choice
	err error
}

var choices sync.Map // FIBERGEN_HOST_ISA's value → chosen

func choice() (hostisa.Choice, error) {
	force := os.Getenv(hostisa.EnvVar)
	if r, ok := choices.Load(force); ok {
		return r.(chosen).c, r.(chosen).err
	}
	c, err := hostisa.Choose(hostisa.For(runtime.GOARCH), hostisa.Host(), force)
	if err != nil {
		err = fmt.Errorf("hostkernel: %w", err)
	}
	choices.Store(force, chosen{c, err})
	return c, err
}

// variantFor is the variant load runs for isa: the chosen one for "",
// else isa itself, which must be the chosen one or a narrower one this
// CPU runs. A variant this CPU cannot run is never loaded.
func variantFor(isa string) (hostisa.Variant, error) {
	c, err := choice()
	if err != nil {
		return hostisa.Variant{}, err
	}
	if isa == "" {
		isa = c.Chosen
	}
	for _, name := range c.Runnable() {
		if name == isa {
			v, _ := hostisa.ByName(name)
			return v, nil
		}
	}
	for _, d := range c.Variants {
		if d.Name == isa {
			return hostisa.Variant{}, fmt.Errorf("hostkernel: the %s variant does not run here: %s", isa, d.Reason)
		}
	}
	return hostisa.Variant{}, fmt.Errorf("hostkernel: no variant %q: want %s", isa, hostisa.Names())
}

// loaded is an entry point looked up in a shared object, which it holds
// open: dlopen counts references, so every entry point closes its own.
type loaded struct {
	name    string // the symbol that runs
	lib, fn uintptr
}

// load opens the shared object at path and looks up symbol's variant for
// isa (variantFor).
func load(path, symbol, isa string) (loaded, error) {
	v, err := variantFor(isa)
	if err != nil {
		return loaded{}, err
	}
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return loaded{}, fmt.Errorf("hostkernel: cannot load %s: %w", path, err)
	}
	fn, err := purego.Dlsym(lib, symbol+v.Suffix)
	if err != nil {
		purego.Dlclose(lib)
		return loaded{}, fmt.Errorf("hostkernel: %s has no function %s (rebuild it with fibergen build)", path, symbol+v.Suffix)
	}
	return loaded{symbol + v.Suffix, lib, fn}, nil
}

// pointers pins the buffers and returns their addresses; an empty buffer
// is a null pointer.
func pointers(pin *runtime.Pinner, bufs []backend.Host) []uintptr {
	ptrs := make([]uintptr, len(bufs))
	for i, b := range bufs {
		if p := b.Pointer(); p != nil {
			pin.Pin(p)
			ptrs[i] = uintptr(p)
		}
	}
	return ptrs
}

// floats are float32 buffers as the functions take them.
func floats(bufs [][]float32) []backend.Host {
	out := make([]backend.Host, len(bufs))
	for i, b := range bufs {
		out[i] = backend.Float32s(b)
	}
	return out
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

// Run steps the coordinates [r.Lo, r.Hi) of bufs in place. Every buffer
// must hold at least r.Hi values and no two may overlap.
func (k *Kernel) Run(bufs [][]float32, scalars []float32, r Range) error {
	return k.RunHost(floats(bufs), scalars, r)
}

// RunHost is Run on buffers of any storage: a state stored as a 16-bit
// type (ir.Storage) is passed as its 16-bit values.
func (k *Kernel) RunHost(bufs []backend.Host, scalars []float32, r Range) error {
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
func (k *Kernel) check(bufs []backend.Host, scalars []float32, r Range) error {
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
		if int64(b.Len()) < r.Hi {
			return fmt.Errorf("hostkernel: buffer %d holds %d values, the range ends at %d", i, b.Len(), r.Hi)
		}
	}
	return nil
}
