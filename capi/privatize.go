package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/fibergen/fibergen/runtime"
)

// fg_privatize writes into out (n float32s) the clipped sum over the batch
// size B of k per-example gradients, cur and, for a two-point optimizer,
// look, each k rows of n values (runtime.Optimizer.PrivatizeTo): each
// example's mix u = A·look + (1−A)·cur is clipped to norm C, or, where
// scalesIn is not NULL, scaled by the k scales given (ghost clipping); with
// clip groups (fg_set_dp_groups) each example's mix is clipped per group.
// scalesIn and scalesOut (either NULL: none) hold nscales floats, which
// must be k, or k·G under G clip groups (group g's k at g·k). It
// stores each example's scale in scalesOut, the number clipped
// in *clipped (both NULL: not wanted); FG_BAD_EXAMPLE, with the example in
// *bad (NULL: not wanted), says an example is not finite and out is
// unchanged. Where out covers the caller's gradient buffer, the next step
// releases it (fg_step); other optimizers over parts of out adopt it
// (fg_adopt_privatized).
//
//export fg_privatize
func fg_privatize(h C.int64_t, out *C.float, n C.int64_t, cur, look *C.float, k C.int64_t, scalesIn, scalesOut *C.float,
	nscales C.int64_t, clipped, bad *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := checkCount("privatize", int64(n), int64(k)); e != nil {
			return e
		}
		if n > 0 && out == nil || n*k > 0 && cur == nil {
			return fmt.Errorf("fibergen: privatize: %d examples of %d values with a NULL buffer", k, n)
		}
		scales, e := scalesOf(o, k, nscales, scalesIn, scalesOut)
		if e != nil {
			return e
		}
		rows := int(n * k)
		st, e := o.PrivatizeTo(floats(out, int(n)), floats(cur, rows), floats(look, rows), scales)
		return privatized(st, e, scalesOut, clipped, bad)
	})
}

// fg_privatize_segments is fg_privatize with the per-example gradients
// read where the trainer left them (runtime.Optimizer.PrivatizeSegmentsTo):
// segment i is one tensor's k rows of sizes[i] values, contiguous at
// cur[i] (and look[i] for a two-point optimizer; look NULL: none), holding
// the coordinates [offsets[i], offsets[i]+sizes[i]) of every example; the
// nseg segments tile [0, n) in order. The same bits as fg_privatize on the
// [k][n] matrix they tile, without it.
//
//export fg_privatize_segments
func fg_privatize_segments(h C.int64_t, out *C.float, n C.int64_t, nseg C.int64_t, offsets, sizes *C.int64_t, cur, look **C.float,
	k C.int64_t, scalesIn, scalesOut *C.float, nscales C.int64_t, clipped, bad *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := checkCount("privatize_segments", int64(n), int64(k)); e != nil {
			return e
		}
		scales, e := scalesOf(o, k, nscales, scalesIn, scalesOut)
		if e != nil {
			return e
		}
		segs, e := segments(int64(nseg), offsets, sizes, cur, look, int64(k))
		if e != nil {
			return e
		}
		if n > 0 && out == nil {
			return fmt.Errorf("fibergen: privatize_segments: %d values into a NULL buffer", n)
		}
		st, e := o.PrivatizeSegmentsTo(floats(out, int(n)), segs, int(k), scales)
		return privatized(st, e, scalesOut, clipped, bad)
	})
}

// segments reads the segments of fg_privatize_segments, refusing a count
// or size out of range and NULL rows where a segment has values.
func segments(nseg int64, offsets, sizes *C.int64_t, cur, look **C.float, k int64) ([]runtime.Segment, error) {
	if e := checkCount("privatize_segments", nseg, 1); e != nil {
		return nil, e
	}
	if nseg > 0 && (offsets == nil || sizes == nil || cur == nil) {
		return nil, fmt.Errorf("fibergen: privatize_segments: %d segments with a NULL array", nseg)
	}
	offs, szs := unsafe.Slice(offsets, nseg), unsafe.Slice(sizes, nseg)
	curs, looks := unsafe.Slice(cur, nseg), []*C.float(nil)
	if look != nil {
		looks = unsafe.Slice(look, nseg)
	}
	segs := make([]runtime.Segment, nseg)
	for i := range segs {
		size := int64(szs[i])
		if e := checkCount(fmt.Sprintf("privatize_segments: segment %d", i), size, k); e != nil {
			return nil, e
		}
		if size*k > 0 && (curs[i] == nil || looks != nil && looks[i] == nil) {
			return nil, fmt.Errorf("fibergen: privatize_segments: segment %d: %d examples of %d values at NULL", i, k, size)
		}
		segs[i] = runtime.Segment{Offset: int(offs[i]), Size: int(size), Cur: floats(curs[i], int(size*k))}
		if looks != nil {
			segs[i].Look = floats(looks[i], int(size*k))
		}
	}
	return segs, nil
}

// fg_privatize_device is fg_privatize on device memory (CUDA): out, cur
// and look (0: none) are device pointers (runtime.Optimizer.PrivatizeDevice);
// scalesIn and scalesOut are host memory.
//
//export fg_privatize_device
func fg_privatize_device(h C.int64_t, out C.uint64_t, n C.int64_t, cur, look C.uint64_t, k C.int64_t, scalesIn, scalesOut *C.float,
	nscales C.int64_t, clipped, bad *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := checkCount("privatize_device", int64(n), int64(k)); e != nil {
			return e
		}
		scales, e := scalesOf(o, k, nscales, scalesIn, scalesOut)
		if e != nil {
			return e
		}
		st, e := o.PrivatizeDevice(runtime.DevicePtr(out), int(n), runtime.DevicePtr(cur), runtime.DevicePtr(look), int(k), scales)
		return privatized(st, e, scalesOut, clipped, bad)
	})
}

// scalesOf checks that the caller's scales (scalesIn, scalesOut; NULL:
// none) hold nscales floats, the k of k examples, or k·G under G clip
// groups, and returns scalesIn's (nil for NULL).
func scalesOf(o *runtime.Optimizer, k, nscales C.int64_t, scalesIn, scalesOut *C.float) ([]float32, error) {
	if scalesIn == nil && scalesOut == nil {
		return nil, nil
	}
	want := int64(o.ScaleCount(int(k)))
	if int64(nscales) != want {
		return nil, fmt.Errorf("fibergen: the scales hold %d floats; %d examples want %d (one an example, and a clip group)", nscales, k, want)
	}
	return floats(scalesIn, int(want)), nil
}

// fg_privatize_device_groups is fg_privatize_device under clip groups
// (runtime.Optimizer.PrivatizeDeviceGroups): cur[g] and look[g] (look
// NULL: none) are device pointers to group g's k rows of its size, a
// matrix of their own, for the ngroups groups of fg_set_dp_groups; out
// holds the n coordinates of all; the scales are k·ngroups floats,
// group-major.
//
//export fg_privatize_device_groups
func fg_privatize_device_groups(h C.int64_t, out C.uint64_t, n C.int64_t, cur, look *C.uint64_t, ngroups, k C.int64_t,
	scalesIn, scalesOut *C.float, nscales C.int64_t, clipped, bad *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := checkCount("privatize_device_groups", int64(n), int64(k)); e != nil {
			return e
		}
		if ngroups < 0 || ngroups > 1<<20 || ngroups > 0 && cur == nil {
			return fmt.Errorf("fibergen: privatize_device_groups: %d groups' rows at %p", ngroups, cur)
		}
		scales, e := scalesOf(o, k, nscales, scalesIn, scalesOut)
		if e != nil {
			return e
		}
		curs, looks := devicePtrs(cur, C.int(ngroups)), []runtime.DevicePtr(nil)
		if look != nil {
			looks = devicePtrs(look, C.int(ngroups))
		}
		st, e := o.PrivatizeDeviceGroups(runtime.DevicePtr(out), int(n), curs, looks, int(k), scales)
		return privatized(st, e, scalesOut, clipped, bad)
	})
}

// privatized stores a privatization's scales, clipped count or bad
// example, each where the caller wants it (not NULL).
func privatized(st runtime.PrivatizeStats, e error, scalesOut *C.float, clipped, bad *C.int64_t) error {
	if e != nil {
		return badExample(e, bad)
	}
	copy(floats(scalesOut, len(st.Scales)), st.Scales)
	if clipped != nil {
		*clipped = C.int64_t(st.Clipped)
	}
	return nil
}

// badExample stores the example of a *runtime.NonFiniteExampleError in
// *bad (not NULL) and returns e.
func badExample(e error, bad *C.int64_t) error {
	var ne *runtime.NonFiniteExampleError
	if errors.As(e, &ne) && bad != nil {
		*bad = C.int64_t(ne.Example)
	}
	return e
}

// fg_clip_scales stores in out the k clipping scales of ghost clipping from
// per-example norms (runtime.Optimizer.ClipScales): curNorm ‖∇f(θ_t; ξ)‖,
// and for a two-point optimizer lookNorm ‖∇f(look; ξ)‖ and dot their inner
// product (else both NULL). With clip groups the k norms are each
// example's in each group, group-major (k = examples · groups), and so are
// the scales.
//
//export fg_clip_scales
func fg_clip_scales(h C.int64_t, lookNorm, curNorm, dot *C.double, k C.int64_t, out *C.float, bad *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := checkCount("clip_scales", int64(k), 2); e != nil {
			return e
		}
		if k > 0 && (curNorm == nil || out == nil) {
			return fmt.Errorf("fibergen: clip_scales: %d examples with a NULL buffer", k)
		}
		scales, e := o.ClipScales(doubles(lookNorm, int(k)), doubles(curNorm, int(k)), doubles(dot, int(k)))
		if e != nil {
			return badExample(e, bad)
		}
		copy(floats(out, int(k)), scales)
		return nil
	})
}
