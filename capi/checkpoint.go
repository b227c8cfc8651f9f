package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/fibergen/fibergen/runtime"
)

// fg_save stores in *out a checkpoint of the optimizer (free it with
// fg_free) and its length in *n: runtime.Optimizer.SaveTo, which for an
// optimizer on the caller's buffers holds the step counter, the seed, the
// hypers and the DP settings, and not the buffers. Given the states the
// caller saves beside it (nstates pointers to sn float32s each, in the
// order of fg_info's buffers after theta and g; NULL and 0: none), it
// holds their SHA-256, and fg_load resumes only with those states.
//
//export fg_save
func fg_save(h C.int64_t, ptrs **C.float, nstates C.int, sn C.int64_t, out *unsafe.Pointer, n *C.size_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("save", unsafe.Pointer(out), unsafe.Pointer(n)); e != nil {
			return e
		}
		st, e := buffers("save", ptrs, nstates, sn)
		if e != nil {
			return e
		}
		var b bytes.Buffer
		if e := o.SaveTo(&b, st...); e != nil {
			return e
		}
		*out, *n = C.CBytes(b.Bytes()), C.size_t(b.Len())
		return nil
	})
}

// checkpointBytes views the caller's n bytes at data.
func checkpointBytes(data unsafe.Pointer, n C.size_t) (*bytes.Reader, error) {
	switch {
	case data == nil && n > 0:
		return nil, fmt.Errorf("fibergen: a checkpoint of %d bytes at NULL", n)
	case uint64(n) > uint64(maxFloats):
		return nil, fmt.Errorf("fibergen: a checkpoint of %d bytes", uint64(n))
	case data == nil:
		return bytes.NewReader(nil), nil
	}
	return bytes.NewReader(unsafe.Slice((*byte)(data), int(n))), nil
}

// withCheckpoint runs f on the checkpoint of n bytes at data and the
// caller's states.
func withCheckpoint(what string, data unsafe.Pointer, n C.size_t, ptrs **C.float, nstates C.int, sn C.int64_t,
	f func(r *bytes.Reader, st [][]float32) error) error {
	r, e := checkpointBytes(data, n)
	if e != nil {
		return e
	}
	st, e := buffers(what, ptrs, nstates, sn)
	if e != nil {
		return e
	}
	return f(r, st)
}

// fg_check_checkpoint returns the error fg_load would return for the n
// bytes at data and the states, changing nothing.
//
//export fg_check_checkpoint
func fg_check_checkpoint(h C.int64_t, data unsafe.Pointer, n C.size_t, ptrs **C.float, nstates C.int, sn C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return withCheckpoint("check_checkpoint", data, n, ptrs, nstates, sn, func(r *bytes.Reader, st [][]float32) error {
			return o.CheckCheckpoint(r, st...)
		})
	})
}

// fg_load restores the optimizer from the checkpoint of n bytes at data
// (runtime.Optimizer.LoadFrom): only into an optimizer that has not
// stepped, only once (the resume record), only with the states whose
// digest it holds (as fg_save took them; the caller copies them into its
// buffers once fg_load succeeds), and on any error nothing changes.
//
//export fg_load
func fg_load(h C.int64_t, data unsafe.Pointer, n C.size_t, ptrs **C.float, nstates C.int, sn C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return withCheckpoint("load", data, n, ptrs, nstates, sn, func(r *bytes.Reader, st [][]float32) error {
			return o.LoadFrom(r, st...)
		})
	})
}

// fg_checkpoint_info stores in *out (free it with fg_free) what the intact
// checkpoint of n bytes at data says (runtime.CheckpointInfo): a JSON
// object {"optimizer", "manifest_sha256", "step", "seed", "noise_mode",
// "offset", "states_digest", "resumed"}, "resumed" being the record of an earlier
// resume or "".
//
//export fg_checkpoint_info
func fg_checkpoint_info(h C.int64_t, data unsafe.Pointer, n C.size_t, out **C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return jsonAnswer("checkpoint_info", out, func() (any, error) {
			r, e := checkpointBytes(data, n)
			if e != nil {
				return nil, e
			}
			return o.CheckpointInfo(r)
		})
	})
}
