//go:build linux

package cudadrv

import (
	"fmt"
	"strings"

	"github.com/ebitengine/purego"
)

// libraryNames are tried in order: the versioned soname the driver package
// always installs, then the unversioned development link.
var libraryNames = []string{"libcuda.so.1", "libcuda.so"}

// openLibrary dlopens the CUDA driver library.
func openLibrary() (handle uintptr, name string, err error) {
	var msgs []string
	for _, n := range libraryNames {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, n, nil
		}
		msgs = append(msgs, err.Error())
	}
	return 0, "", fmt.Errorf("cuda: cannot load libcuda.so.1 (no NVIDIA driver on this machine?): %s",
		strings.Join(msgs, "; "))
}

// lookupSymbol returns the address of name in the library, or an error
// (purego.Dlsym reports a missing symbol as an error, never as a panic).
func lookupSymbol(handle uintptr, name string) (uintptr, error) {
	return purego.Dlsym(handle, name)
}

// bindFunc makes the Go function variable *fptr call the C function at addr.
// purego.RegisterFunc panics on a Go function type it cannot marshal; that
// panic is turned into an error here.
func bindFunc(fptr any, addr uintptr) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	purego.RegisterFunc(fptr, addr)
	return nil
}
