package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"

	"github.com/fibergen/fibergen/runtime"
)

// fg_register_range adds to the optimizer a tensor name of n coordinates
// that holds no values of its own: the next n coordinates of the buffers
// the caller gives (fg_use_buffers, fg_step_device, which must then hold
// as many as the ranges together), which fg_set_tensor_hypers gives hypers
// of their own (runtime.Optimizer.RegisterRange). One optimizer over a
// trainer's parameter groups registers one range per group.
//
//export fg_register_range
func fg_register_range(h C.int64_t, name *C.char, n C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		_, e := o.RegisterRange(C.GoString(name), int(n))
		return e
	})
}

// fg_set_tensor_shape gives the tensor name the shape of the JSON array of
// its dimensions, [rows..., cols], before the first step
// (runtime.Tensor.SetShape): an optimizer that reads each tensor's rows
// and columns (fg_info's lines) steps it with that shape.
//
//export fg_set_tensor_shape
func fg_set_tensor_shape(h C.int64_t, name, shapeJSON *C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var shape []int
		if e := decodeJSON("tensor shape", C.GoString(shapeJSON), &shape); e != nil {
			return e
		}
		t, e := tensorNamed(o, C.GoString(name))
		if e != nil {
			return e
		}
		return t.SetShape(shape...)
	})
}

// fg_tensor_state copies the tensor name's part of the state state into
// out, which holds n floats, exactly as many as that part: the tensor's
// coordinates, or for a state per row or per column its rows or columns
// (runtime.Tensor.State).
//
//export fg_tensor_state
func fg_tensor_state(h C.int64_t, name, state *C.char, out *C.float, n C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		t, e := tensorNamed(o, C.GoString(name))
		if e != nil {
			return e
		}
		vals, e := t.State(C.GoString(state))
		if e != nil {
			return e
		}
		if int64(n) != int64(len(vals)) || (out == nil && n > 0) {
			return fmt.Errorf("fibergen: state %s of tensor %s holds %d values, the buffer given %d", C.GoString(state), t.Name, len(vals), n)
		}
		copy(floats(out, int(n)), vals)
		return nil
	})
}

// fg_set_tensor_hypers sets the hypers of the JSON object {"name": value,
// ...} for the tensor name's coordinates, replacing its earlier ones ({}:
// none, the optimizer's hypers), checked as fg_set_hypers checks them; a
// hyper the observation reads cannot differ per tensor
// (runtime.Tensor.SetHypers). On an error nothing changes.
//
//export fg_set_tensor_hypers
func fg_set_tensor_hypers(h C.int64_t, name, valuesJSON *C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var values map[string]float64
		if e := decodeJSON("tensor hypers", C.GoString(valuesJSON), &values); e != nil {
			return e
		}
		t, e := tensorNamed(o, C.GoString(name))
		if e != nil {
			return e
		}
		return t.SetHypers(values)
	})
}

// fg_set_tensors_hypers is fg_set_tensor_hypers for each tensor of the
// JSON array of names, all with the same hypers, checked once
// (runtime.Optimizer.SetTensorsHypers): one call for a parameter group
// whose parameters are ranges of their own (an optimizer with per-tensor
// reductions), where a scheduler sets a group's hypers at every step. On
// an error nothing changes.
//
//export fg_set_tensors_hypers
func fg_set_tensors_hypers(h C.int64_t, namesJSON, valuesJSON *C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var names []string
		var values map[string]float64
		if e := decodeJSON("tensor names", C.GoString(namesJSON), &names); e != nil {
			return e
		}
		if e := decodeJSON("tensor hypers", C.GoString(valuesJSON), &values); e != nil {
			return e
		}
		ts, e := tensorsNamed(o, names)
		if e != nil {
			return e
		}
		return o.SetTensorsHypers(ts, values)
	})
}

// fg_tensor_hypers writes to *out (freed with fg_free) a JSON object of
// the optimizer's hypers ("hypers", as fg_info's) and, for each tensor of
// the JSON array of names, fg_info's description of it ("tensors", in that
// order): what a caller that just set hypers reads back without fg_info's
// every tensor.
//
//export fg_tensor_hypers
func fg_tensor_hypers(h C.int64_t, namesJSON *C.char, out **C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var names []string
		if e := decodeJSON("tensor names", C.GoString(namesJSON), &names); e != nil {
			return e
		}
		ts, e := tensorsNamed(o, names)
		if e != nil {
			return e
		}
		return jsonAnswer("tensor hypers", out, func() (any, error) {
			return map[string]any{"hypers": o.Hypers(), "tensors": tensorInfos(ts)}, nil
		})
	})
}

// tensorsNamed are the optimizer's tensors of those names, in order.
func tensorsNamed(o *runtime.Optimizer, names []string) ([]*runtime.Tensor, error) {
	byName := map[string]*runtime.Tensor{}
	for _, t := range o.Tensors() {
		byName[t.Name] = t
	}
	out := make([]*runtime.Tensor, len(names))
	for i, name := range names {
		if out[i] = byName[name]; out[i] == nil {
			return nil, fmt.Errorf("fibergen: %s has no tensor %q", o.Name(), name)
		}
	}
	return out, nil
}

// tensorNamed is the optimizer's tensor of that name.
func tensorNamed(o *runtime.Optimizer, name string) (*runtime.Tensor, error) {
	ts, err := tensorsNamed(o, []string{name})
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// tensorInfo is a tensor as fg_info reports it.
type tensorInfo struct {
	Name   string             `json:"name"`
	Offset int                `json:"offset"`
	Len    int                `json:"len"`
	Own    map[string]float64 `json:"own"`    // its own hypers (fg_set_tensor_hypers); {} for none
	Hypers []runtime.Hyper    `json:"hypers"` // every hyper as it steps with them
}

// tensorInfos describes the tensors ts.
func tensorInfos(ts []*runtime.Tensor) []tensorInfo {
	out := []tensorInfo{}
	for _, t := range ts {
		own := t.Hypers()
		if own == nil {
			own = map[string]float64{}
		}
		out = append(out, tensorInfo{Name: t.Name, Offset: t.Offset, Len: t.Len, Own: own, Hypers: t.HyperValues()})
	}
	return out
}

// hostBufferPads is how many floats into its allocation the runtime
// starts each of the optimizer's host buffers (runtime.HostBufferPad).
func hostBufferPads(o *runtime.Optimizer) []int {
	out := make([]int, len(o.Manifest().Buffers))
	for k := range out {
		out[k] = runtime.HostBufferPad(k)
	}
	return out
}

// shardRequest is fg_shard's request.
type shardRequest struct {
	Sizes []int `json:"sizes"`
	World int   `json:"world"`
	Rank  int   `json:"rank"`
	Whole bool  `json:"whole,omitempty"` // runtime.ShardWhole: each tensor one worker's
}

// fg_shard lays out tensors of the sizes of the JSON object {"sizes":
// [...], "world", "rank"}, consecutive in one flat buffer, over world
// workers, each keeping the states of its shard (ZeRO-1), and stores in
// *out (free it with fg_free) worker rank's shard (runtime.Shard):
// {"slice", "lo", "hi", "parts"}, every shard's length (a multiple of 4;
// with "whole", the longest's), this shard's coordinates [lo, hi) and each
// tensor's [lo, hi) in it.
// With "whole": true, the shards are cut only where a tensor ends
// (runtime.ShardWhole, for per-tensor reductions), of unequal length, and
// the answer's "bounds" are every worker's. Without an optimizer.
//
//export fg_shard
func fg_shard(request *C.char, out **C.char, err *C.char, errlen C.size_t) C.int {
	return status(jsonAnswer("shard", out, func() (any, error) {
		var q shardRequest
		if e := decodeJSON("shard", C.GoString(request), &q); e != nil {
			return nil, e
		}
		if q.Whole {
			return runtime.ShardWhole(q.Sizes, q.World, q.Rank)
		}
		return runtime.Shard(q.Sizes, q.World, q.Rank)
	}), err, errlen)
}
