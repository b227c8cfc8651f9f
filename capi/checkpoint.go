package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"unsafe"

	"github.com/fibergen/fibergen/runtime"
)

// fg_save stores in *out a checkpoint of the optimizer (free it with
// fg_free) and its length in *n: runtime.Optimizer.SaveTo, which for an
// optimizer on the caller's buffers holds the step counter, the seed, the
// hypers and the DP settings, and not the buffers.
//
//export fg_save
func fg_save(h C.int64_t, out *unsafe.Pointer, n *C.size_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var b bytes.Buffer
		if e := o.SaveTo(&b); e != nil {
			return e
		}
		*out, *n = C.CBytes(b.Bytes()), C.size_t(b.Len())
		return nil
	})
}

// checkpointBytes views the caller's n bytes at data.
func checkpointBytes(data unsafe.Pointer, n C.size_t) *bytes.Reader {
	if data == nil {
		return bytes.NewReader(nil)
	}
	return bytes.NewReader(unsafe.Slice((*byte)(data), int(n)))
}

// fg_check_checkpoint returns the error fg_load would return for the n
// bytes at data, changing nothing.
//
//export fg_check_checkpoint
func fg_check_checkpoint(h C.int64_t, data unsafe.Pointer, n C.size_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.CheckCheckpoint(checkpointBytes(data, n)) })
}

// fg_load restores the optimizer from the checkpoint of n bytes at data
// (runtime.Optimizer.LoadFrom): only into an optimizer that has not
// stepped, and on any error nothing changes.
//
//export fg_load
func fg_load(h C.int64_t, data unsafe.Pointer, n C.size_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.LoadFrom(checkpointBytes(data, n)) })
}
