package cudadrv

import (
	"errors"
	"fmt"
	"reflect"
)

// A driver in Go: LoadGo binds the driver API to Go functions instead of
// libcuda's, so that everything above it — this package's marshalling of
// kernel parameters, module loading with its JIT log, and the callers'
// launch shapes — runs unchanged on a simulated device (the PTX simulator
// of package internal/cudasim), on every CI machine.

// LoadGo returns a Driver whose entry points are the Go functions that
// lookup returns for the driver's symbol names (cuInit, cuMemAlloc_v2, …),
// each with the exact Go type of the binding's C signature, after calling
// its cuInit(0). name is what Library reports. A symbol for which lookup
// returns nil is missing, which only an optional one may be.
func LoadGo(name string, lookup func(symbol string) any) (*Driver, error) {
	d := &Driver{libName: name, goLookup: lookup}
	for _, s := range d.symbols() {
		if err := d.bindGo(s, lookup); err != nil {
			return nil, err
		}
	}
	d.setModuleLoadName()
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Driver) bindGo(s symbol, lookup func(string) any) error {
	for _, n := range s.names {
		fn := lookup(n)
		if fn == nil {
			continue
		}
		dst, v := reflect.ValueOf(s.fptr).Elem(), reflect.ValueOf(fn)
		if v.Type() != dst.Type() {
			return fmt.Errorf("cuda: %s: %s is a %v, want %v", d.libName, n, v.Type(), dst.Type())
		}
		dst.Set(v)
		if s.bound != nil {
			*s.bound = n
		}
		return nil
	}
	if s.optional {
		return nil
	}
	return fmt.Errorf("cuda: %s lacks %s", d.libName, s.names[0])
}

// Use makes Load return d instead of loading libcuda: for a test binary
// that runs its CUDA code on a driver from LoadGo. It must be called
// before the first Load.
func Use(d *Driver) error {
	if d == nil {
		return errors.New("cuda: Use of a nil driver")
	}
	used := false
	loadOnce.Do(func() { loaded, loadedErr, used = d, nil, true })
	if !used {
		return errors.New("cuda: Use after Load")
	}
	return nil
}
