package cudadrv

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a failed CUDA driver call: the CUresult a driver function
// returned, with the driver's own name and description of it.
type Error struct {
	// Call is the driver function that failed, e.g. "cuModuleLoadDataEx".
	Call string
	// Code is the CUresult value, e.g. 218 for CUDA_ERROR_INVALID_PTX.
	Code int
	// Name is the CUresult's symbolic name from cuGetErrorName, e.g.
	// "CUDA_ERROR_INVALID_PTX"; empty when the driver does not know it.
	Name string
	// Message is the driver's description from cuGetErrorString, e.g.
	// "a PTX JIT compilation failed"; empty when the driver gave none.
	Message string
	// Log is the JIT compiler's error log when loading a module failed
	// (see Context.LoadModule); empty otherwise.
	Log string
}

// Error formats e as "cuda: <call>: <name> (<message>)", followed by the JIT
// error log on the next lines when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cuda: ")
	if e.Call != "" {
		b.WriteString(e.Call)
		b.WriteString(": ")
	}
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult %d", e.Code)
	}
	b.WriteString(name)
	if e.Message != "" {
		b.WriteString(" (")
		b.WriteString(e.Message)
		b.WriteString(")")
	}
	if log := strings.TrimSpace(e.Log); log != "" {
		b.WriteString("\nJIT error log:\n")
		b.WriteString(log)
	}
	return b.String()
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, &cudadrv.Error{Code: cudadrv.CodeOutOfMemory}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Some CUresult codes a caller may want to test for (Error.Code).
const (
	CodeSuccess              = 0   // CUDA_SUCCESS
	CodeInvalidValue         = 1   // CUDA_ERROR_INVALID_VALUE
	CodeOutOfMemory          = 2   // CUDA_ERROR_OUT_OF_MEMORY
	CodeNotInitialized       = 3   // CUDA_ERROR_NOT_INITIALIZED
	CodeDeinitialized        = 4   // CUDA_ERROR_DEINITIALIZED
	CodeNoDevice             = 100 // CUDA_ERROR_NO_DEVICE
	CodeInvalidDevice        = 101 // CUDA_ERROR_INVALID_DEVICE
	CodeInvalidImage         = 200 // CUDA_ERROR_INVALID_IMAGE
	CodeInvalidContext       = 201 // CUDA_ERROR_INVALID_CONTEXT
	CodeInvalidPTX           = 218 // CUDA_ERROR_INVALID_PTX
	CodeUnsupportedPTX       = 222 // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
	CodeInvalidHandle        = 400 // CUDA_ERROR_INVALID_HANDLE
	CodeNotFound             = 500 // CUDA_ERROR_NOT_FOUND
	CodeNotReady             = 600 // CUDA_ERROR_NOT_READY
	CodeIllegalAddress       = 700 // CUDA_ERROR_ILLEGAL_ADDRESS
	CodeLaunchOutOfResources = 701 // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
	CodeLaunchTimeout        = 702 // CUDA_ERROR_LAUNCH_TIMEOUT
	CodeLaunchFailed         = 719 // CUDA_ERROR_LAUNCH_FAILED
	CodeNotSupported         = 801 // CUDA_ERROR_NOT_SUPPORTED
	CodeSystemDriverMismatch = 803 // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
)

// ErrClosed is returned by methods of a Context, Module or Timer that was
// already closed (unloaded).
var ErrClosed = errors.New("cuda: use of a closed context, module or timer")
