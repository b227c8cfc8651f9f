//go:build !linux

package cudadrv

import (
	"errors"
	"runtime"
)

// errUnsupported is what Load returns where this binding has no loader.
var errUnsupported = errors.New("cuda: the CUDA driver binding supports linux only, not " + runtime.GOOS)

func openLibrary() (handle uintptr, name string, err error) {
	return 0, "", errUnsupported
}

func lookupSymbol(handle uintptr, name string) (uintptr, error) {
	return 0, errUnsupported
}

func bindFunc(fptr any, addr uintptr) error {
	return errUnsupported
}
