// Command capi is fibergen's C ABI: built with
//
//	go build -buildmode=c-shared -o libfibergen.so ./capi
//
// (make python-lib), it exports package runtime to C, so that trainers in
// other languages drive the one host side fibergen has — the per-step host
// scalars, the attenuation, the stability checks, the noise position, the
// privatization, the checkpoint rules and the privacy accountant — rather
// than re-implementing it. The PyTorch binding (python/fibergen) is its
// first user; a C or C++ trainer links it the same way, with the header
// libfibergen.h that the build writes next to the library.
//
// An optimizer is a handle (fg_open, fg_close). Every function returns a
// status, which the header defines: FG_OK (0); FG_ERROR (1), with a
// one-line message written into the caller's err buffer (NUL-terminated,
// truncated to errlen); FG_NONFINITE
// (2), a gradient entry that is NaN or ±Inf, step skipped; FG_BAD_EXAMPLE
// (3), a per-example gradient that is not finite, privatization skipped.
// Strings and checkpoints the library returns are malloc'd: release them
// with fg_free. Pointers to float32 buffers are the caller's memory, used
// only during the call (fg_use_buffers excepted: those stay in use until
// fg_close). Every function checks its sizes for overflow and its output
// pointers before it changes anything: a required one that is NULL is an
// FG_ERROR; the optional ones (a non-finite entry's index and value, the
// number of examples clipped, the bad example, the scales) may be NULL. A
// handle may be used from any thread, one call at a time (fg_spent, which
// only reads, beside any other).
// docs/python.md describes the binding and this ABI.
package main

//go:generate go run ./internal/genpy -capi . -o ../python/fibergen/_abi.py

/*
#include <stdint.h>
#include <stdlib.h>

// The ABI version fg_abi_version returns, and the statuses every function
// returns, copied by cgo into libfibergen.h and by capi/internal/genpy
// into the binding's _abi.py. The statuses are defined here alone; the
// version is a second literal in internal/version (CABI, which fibergen
// --version prints and which cannot import this package main): change
// both, capi/version_test.go keeps them equal.
#define FG_ABI_VERSION 14
#define FG_OK 0
#define FG_ERROR 1
#define FG_NONFINITE 2
#define FG_BAD_EXAMPLE 3
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/fibergen/fibergen/runtime"
)

// The statuses every function returns (the preamble's FG_*).
const (
	statusOK         = C.FG_OK
	statusError      = C.FG_ERROR
	statusNonFinite  = C.FG_NONFINITE
	statusBadExample = C.FG_BAD_EXAMPLE
)

// abiVersion is fg_abi_version, FG_ABI_VERSION: 5 added the ranges with
// hypers of their own (fg_register_range, fg_set_tensor_hypers), fg_shard,
// and fg_info's tensors and host_buffer_pad; 6 moved fg_info's spent into
// fg_spent, so that fg_info never waits on the accountant; 7 added
// fg_resolve, optimizers by name; 8 added fg_privatize_segments, the
// per-example gradients read in place, and the clamp warning (fg_warnings,
// fg_info's clamp_warning, the open option no_clamp_warning); 9 added the
// secure noise mode (the open option noise_mode, fg_info's noise_mode and
// noise_scheme, fg_share_key and fg_set_key for ranks to agree on a key,
// fg_checkpoint_info's noise_mode); 10 added fg_set_tensors_hypers and
// fg_tensor_hypers, a parameter group's ranges set and read in one call;
// 11 added fg_info's dtypes, and fg_use_buffers and fg_step_device take a
// state stored as a 16-bit type as its 16-bit values; 12 added
// fg_resolve's params, kernels for bfloat16 or float16 parameters, whose
// theta those calls then take as 16-bit values too; 13 added per-group
// clipping (fg_set_dp_groups, fg_privatize_device_groups, fg_set_budget's
// clip_groups, fg_info's dp.clip_groups) and the scales' length nscales to
// every privatize call, which the library checks; 14 added states per row
// and per column (fg_set_tensor_shape, fg_tensor_state, fg_info's lines
// and line_states).
const abiVersion = C.FG_ABI_VERSION

func main() {}

// handles are the open optimizers by handle.
var handles = struct {
	sync.Mutex
	next int64
	m    map[int64]*handle
}{m: map[int64]*handle{}}

// handle is one open optimizer; mu serializes the calls on it.
type handle struct {
	mu sync.Mutex
	o  *runtime.Optimizer
}

func lookup(h C.int64_t) (*handle, error) { return handleOf(int64(h)) }

// handleOf returns the open handle h.
func handleOf(h int64) (*handle, error) {
	handles.Lock()
	defer handles.Unlock()
	x, ok := handles.m[h]
	if !ok {
		return nil, errors.New("fibergen: no optimizer with this handle (closed?)")
	}
	return x, nil
}

// with runs f on the optimizer of h and turns its error into a status,
// writing the message into err.
func with(h C.int64_t, err *C.char, errlen C.size_t, f func(o *runtime.Optimizer) error) C.int {
	x, e := lookup(h)
	if e == nil {
		e = x.run(f)
	}
	return status(e, err, errlen)
}

// optimizer is the handle's optimizer, nil once closed; the runtime's own
// lock serializes what is done with it.
func (x *handle) optimizer() *runtime.Optimizer {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.o
}

// run runs f on the optimizer, one call at a time, unless it was closed
// meanwhile.
func (x *handle) run(f func(o *runtime.Optimizer) error) (err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.o == nil {
		return errors.New("fibergen: the optimizer is closed")
	}
	defer recovered(&err)
	return f(x.o)
}

// recovered turns a panic — a NULL output pointer, a length past memory —
// into an error, so that no bad argument brings down the caller's process
// with a Go panic.
func recovered(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("fibergen: bad arguments (%v)", r)
	}
}

// status maps an error to its status and writes its message into err.
func status(e error, err *C.char, errlen C.size_t) C.int {
	if e == nil {
		return statusOK
	}
	writeString(err, errlen, e.Error())
	var nf *runtime.NonFiniteError
	var ne *runtime.NonFiniteExampleError
	switch {
	case errors.As(e, &nf):
		return statusNonFinite
	case errors.As(e, &ne):
		return statusBadExample
	}
	return statusError
}

// writeString copies s into the C buffer dst of n bytes, NUL-terminated.
func writeString(dst *C.char, n C.size_t, s string) {
	if dst == nil || n == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(dst)), int(n))
	k := copy(b[:len(b)-1], s)
	b[k] = 0
}

// maxFloats is the most float32s one buffer may hold: its bytes fit in an
// int64 (and a Go slice).
const maxFloats = math.MaxInt64 / 8

// checkCount refuses a count of values, or count·per, that is negative or
// past maxFloats, either factor included: a product that would wrap, a
// slice past memory.
func checkCount(what string, count, per int64) error {
	if count < 0 || per < 0 || count > maxFloats || per > maxFloats || per > 0 && count > maxFloats/per {
		return fmt.Errorf("fibergen: %s: %d × %d values", what, count, per)
	}
	return nil
}

// jsonAnswer is the body of a C function that answers in JSON (fg_shard,
// fg_privacy; fg_info, fg_spent, fg_checkpoint_info inside with): it refuses a NULL out, calls
// answer — which reads the request — and stores its value, as JSON, in *out
// (free it with fg_free); answer's error, or a panic as recovered makes it,
// comes back unchanged and leaves *out alone.
func jsonAnswer(what string, out **C.char, answer func() (any, error)) (err error) {
	defer recovered(&err)
	if e := required(what, unsafe.Pointer(out)); e != nil {
		return e
	}
	v, e := answer()
	if e != nil {
		return e
	}
	data, e := json.Marshal(v)
	if e != nil {
		return e
	}
	*out = C.CString(string(data))
	return nil
}

// required refuses a NULL output pointer, before anything changes.
func required(what string, ptrs ...unsafe.Pointer) error {
	for _, p := range ptrs {
		if p == nil {
			return fmt.Errorf("fibergen: %s: an output pointer is NULL", what)
		}
	}
	return nil
}

// buffers views the caller's count buffers of n float32s each at ptrs
// (NULL with count 0: none, nil), checking the counts and the pointers.
func buffers(what string, ptrs **C.float, count C.int, n C.int64_t) ([][]float32, error) {
	ps, e := bufferPointers(what, ptrs, count, n)
	out := make([][]float32, len(ps))
	for i, p := range ps {
		out[i] = floats(p, int(n))
	}
	return out, e
}

// bufferPointers checks the caller's count buffer pointers at ptrs (NULL
// with count 0: none) for n values each, and returns them.
func bufferPointers(what string, ptrs **C.float, count C.int, n C.int64_t) ([]*C.float, error) {
	if e := checkCount(what, int64(n), int64(count)); e != nil {
		return nil, e
	}
	if ptrs == nil {
		if count > 0 {
			return nil, fmt.Errorf("fibergen: %s: %d buffers at NULL", what, count)
		}
		return nil, nil
	}
	ps := unsafe.Slice(ptrs, int(count))
	for i, p := range ps {
		if p == nil && n > 0 {
			return nil, fmt.Errorf("fibergen: %s: buffer %d is a null pointer", what, i)
		}
	}
	return ps, nil
}

// floats views n float32s of C memory at p as a slice; nil for p nil.
func floats(p *C.float, n int) []float32 {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), n)
}

// doubles views n float64s of C memory at p as a slice; nil for p nil.
func doubles(p *C.double, n int) []float64 {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(p)), n)
}

//export fg_abi_version
func fg_abi_version() C.int { return abiVersion }

//export fg_free
func fg_free(p unsafe.Pointer) { C.free(p) }
