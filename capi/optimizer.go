package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unsafe"

	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
)

// openOptions are fg_open's options, a JSON object.
type openOptions struct {
	Backend            runtime.Backend `json:"backend"`
	Device             int             `json:"device"`
	Offset             uint64          `json:"offset"`
	Threads            int             `json:"threads"`
	AllowExtrapolation bool            `json:"allow_extrapolation"`
	AllowResumeAgain   bool            `json:"allow_resume_again"`
	AllowUnstable      bool            `json:"allow_unstable"`
	AllowGradientReuse bool            `json:"allow_gradient_reuse"` // benchmarks only
	StateDir           string          `json:"state_dir"`
	NoClampWarning     bool            `json:"no_clamp_warning"`
	// NoiseMode is the noise scheme, "philox" (also "": the default) or
	// "secure" (runtime.Options.SecureNoise).
	NoiseMode string `json:"noise_mode"`
}

// fg_open opens the optimizer fibergen build wrote into dir
// (generated/<name>) with the options in optionsJSON and stores its handle
// in *out.
//
//export fg_open
func fg_open(dir, optionsJSON *C.char, out *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return status(openHandle(dir, optionsJSON, out), err, errlen)
}

func openHandle(dir, optionsJSON *C.char, out *C.int64_t) (err error) {
	defer recovered(&err)
	if out == nil {
		return errors.New("fibergen: open: no place for the handle (out is NULL)")
	}
	var opts openOptions
	if e := decodeJSON("open options", C.GoString(optionsJSON), &opts); e != nil {
		return e
	}
	ro, e := opts.options()
	if e != nil {
		return e
	}
	o, e := runtime.Open(C.GoString(dir), ro)
	if e != nil {
		return e
	}
	*out = C.int64_t(register(o))
	return nil
}

// options are the runtime's options of the open options.
func (opts openOptions) options() (runtime.Options, error) {
	secure := false
	if opts.NoiseMode != "" {
		m, err := rng.ParseMode(opts.NoiseMode)
		if err != nil {
			return runtime.Options{}, fmt.Errorf("fibergen: open options: %w", err)
		}
		secure = m == rng.Secure
	}
	return runtime.Options{Backend: opts.Backend, Device: opts.Device, Offset: opts.Offset, Threads: opts.Threads,
		AllowExtrapolation: opts.AllowExtrapolation, AllowResumeAgain: opts.AllowResumeAgain, AllowUnstable: opts.AllowUnstable,
		AllowGradientReuse: opts.AllowGradientReuse, StateDir: opts.StateDir, NoClampWarning: opts.NoClampWarning,
		SecureNoise: secure}, nil
}

// register gives o a new handle.
func register(o *runtime.Optimizer) int64 {
	handles.Lock()
	defer handles.Unlock()
	handles.next++
	handles.m[handles.next] = &handle{o: o}
	return handles.next
}

// decodeJSON decodes s, one JSON value, into v, refusing unknown fields
// and anything after the value; its error says "fibergen: what: ".
func decodeJSON(what, s string, v any) error {
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("fibergen: %s: %w", what, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("fibergen: %s: data after the JSON value at offset %d", what, d.InputOffset())
	}
	return nil
}

// fg_close closes the optimizer and forgets its handle.
//
//export fg_close
func fg_close(h C.int64_t, err *C.char, errlen C.size_t) C.int {
	x, e := lookup(h)
	if e != nil {
		return status(e, err, errlen)
	}
	handles.Lock()
	delete(handles.m, int64(h))
	handles.Unlock()
	return status(x.run(func(o *runtime.Optimizer) error {
		x.o = nil // a call that looked the handle up before the delete finds it closed
		return o.Close()
	}), err, errlen)
}

// info is what fg_info reports: the optimizer as it stands.
type info struct {
	Name            string                `json:"name"`
	ManifestSHA256  string                `json:"manifest_sha256"`
	Backend         runtime.Backend       `json:"backend"`
	HostKernel      string                `json:"host_kernel"` // the host function the cpu backend runs, e.g. fiber_cpu_avx512
	HostISA         *runtime.ISAChoice    `json:"host_isa"`    // its variant and why, per variant (runtime.Optimizer.HostISA); null off the cpu backend
	Buffers         []string              `json:"buffers"`
	DTypes          []string              `json:"dtypes"`        // each buffer's storage type: float32, or a state's bfloat16 or float16 (docs/dsl.md, "Storage types")
	Starts          map[string]string     `json:"starts"`        // the states the step starts from another value at step 0, and from what (manifest.Buffer.Start)
	NoiseBuffers    []string              `json:"noise_buffers"` // the noise block's buffers, which hold past noise: a binding never shows them
	Hypers          []runtime.Hyper       `json:"hypers"`
	Steps           int                   `json:"steps"`
	Len             int                   `json:"len"`
	Observation     observation           `json:"observation"`
	LookaheadBuffer int                   `json:"lookahead_buffer"`
	DP              *dpSettings           `json:"dp"`
	Attenuations    []runtime.Attenuation `json:"attenuations"`
	Tensors         []tensorInfo          `json:"tensors"`
	HostBufferPad   []int                 `json:"host_buffer_pad"` // floats into its allocation each host buffer starts (runtime.HostBufferPad)
	ClampWarning    bool                  `json:"clamp_warning"`   // the clamp warning watches it (runtime.Optimizer.ClampWarning): fg_warnings after a step
	NoiseMode       string                `json:"noise_mode"`      // "philox" or "secure" (runtime.Optimizer.NoiseMode)
	NoiseScheme     string                `json:"noise_scheme"`    // the mode's scheme and its version: rng.Version or rng.SecureVersion
	Reductions      int                   `json:"reductions"`      // the per-tensor reductions (sums, maxima, minima) the step reads (docs/runtime.md, "Reductions"): each tensor is a range of its own
	Lines           bool                  `json:"lines"`           // the step reads each tensor's rows and columns (runtime.Optimizer.ReadsLines): each tensor is a range of its own with its shape (fg_set_tensor_shape), on backend go
	LineStates      []runtime.LineState   `json:"line_states"`     // the states per row or per column (fg_tensor_state reads them)
}

// observation is runtime.Observation: kind "two_point" or "" (one point).
type observation struct {
	Kind      string  `json:"kind"`
	A         float64 `json:"a"`
	Lookahead float64 `json:"lookahead"`
}

type dpSettings struct {
	Clip            float64 `json:"clip"` // 0 with clip groups
	NoiseMultiplier float64 `json:"noise_multiplier"`
	BatchSize       int     `json:"batch_size"`
	SigmaW2         float64 `json:"sigma_w2"` // the noise variance per coordinate (with proportional noise, each group's is in clip_groups)
	// ClipGroups is per-group clipping, each with its noise variance.
	ClipGroups        []clipGroupInfo `json:"clip_groups,omitempty"`
	ProportionalNoise bool            `json:"proportional_noise,omitempty"`
}

// clipGroupInfo is a clip group and the noise variance of its coordinates.
type clipGroupInfo struct {
	runtime.ClipGroup
	SigmaW2 float64 `json:"sigma_w2"`
}

// dpInfo is fg_info's dp of d.
func dpInfo(d runtime.DP) *dpSettings {
	x := &dpSettings{d.ClipNorm, d.NoiseMultiplier, d.BatchSize, d.SigmaW2(), nil, d.ProportionalNoise}
	for g, grp := range d.Groups {
		x.ClipGroups = append(x.ClipGroups, clipGroupInfo{grp, d.GroupSigmaW2(g)})
	}
	return x
}

type spent struct {
	Epsilon     *float64 `json:"epsilon"` // null: unbounded (a PLD accountant beyond its reach)
	Delta       float64  `json:"delta"`
	Evaluations int      `json:"evaluations"` // compositions the accountant computed (runtime.Optimizer.AccountantEvaluations): its table, none per step
}

// fg_spent stores in *out (free it with fg_free) the JSON object {"epsilon",
// "delta", "evaluations"} of the privacy the steps taken spent under the
// budget (runtime.Optimizer.Spent; epsilon null where unbounded), or null
// without one: a read of the budget's table, which waits only for an
// entry its computation in the background has not reached yet. It is
// apart from fg_info so that nothing else a step asks for waits on the
// accountant, and it holds the handle only to find its optimizer: the
// runtime reads the budget under its own lock and waits or composes
// outside it, so a thread asking for ε holds up no other thread's call.
//
//export fg_spent
func fg_spent(h C.int64_t, out **C.char, err *C.char, errlen C.size_t) C.int {
	return status(jsonAnswer("spent", out, func() (any, error) { return spentOf(int64(h)) }), err, errlen)
}

// spentOf is fg_spent's answer for handle h.
func spentOf(h int64) (*spent, error) {
	x, err := handleOf(h)
	if err != nil {
		return nil, err
	}
	o := x.optimizer()
	if o == nil {
		return nil, errors.New("fibergen: the optimizer is closed")
	}
	g, ok := o.Spent() // safe beside any call on o, Close included
	if !ok {
		return nil, nil
	}
	out := &spent{Delta: g.Delta, Evaluations: o.AccountantEvaluations()}
	if !math.IsInf(g.Epsilon, 1) {
		out.Epsilon = &g.Epsilon
	}
	return out, nil
}

// fg_info stores in *out a JSON object (free it with fg_free): the name,
// the build hash, the backend and the host function it runs, the
// instruction-set variant chosen for it and why ("host_isa": {"chosen":
// "avx512", "variants": [{"name", "chosen", "reason", "missing"}, ...]}),
// the buffers in ABI order, the hypers, the steps taken,
// the next step's observation and look-ahead buffer, the DP settings,
// the attenuation of each filtered state,
// the tensors (ranges; name, offset, len, their own hypers and every hyper
// they step with), how far into its allocation the runtime starts each
// host buffer, which a caller allocating them staggers alike, whether the
// clamp warning watches it, and the noise mode ("noise_mode": "philox" or
// "secure") with its scheme's version ("noise_scheme").
//
//export fg_info
func fg_info(h C.int64_t, out **C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return jsonAnswer("info", out, func() (any, error) { return infoOf(o), nil })
	})
}

// infoOf is what fg_info says of o.
func infoOf(o *runtime.Optimizer) info {
	obs := o.Observation()
	x := info{Name: o.Name(), ManifestSHA256: o.ManifestHash(), Backend: o.Backend(), HostKernel: o.HostKernel(), HostISA: o.HostISA(), Hypers: o.Hypers(),
		Steps: o.Steps(), Len: o.Len(), Observation: observation{obs.Kind, obs.A, obs.Lookahead},
		LookaheadBuffer: o.LookaheadBuffer(), Attenuations: o.Attenuations(), Tensors: tensorInfos(o.Tensors()), HostBufferPad: hostBufferPads(o),
		ClampWarning: o.ClampWarning()}
	mode, scheme := o.NoiseMode()
	x.NoiseMode, x.NoiseScheme = mode.String(), scheme
	if r := o.Manifest().Kernels.Reduce; r != nil {
		x.Reductions = len(r.Terms)
	}
	x.Lines, x.LineStates = o.ReadsLines(), append([]runtime.LineState{}, o.LineStates()...)
	x.Starts, x.NoiseBuffers = map[string]string{}, []string{}
	for _, b := range o.Manifest().Buffers {
		x.Buffers, x.DTypes = append(x.Buffers, b.Name), append(x.DTypes, b.DType)
		if b.Start != "" {
			x.Starts[b.Name] = b.Start
		}
		if b.Role == manifest.NoiseBufferRole {
			x.NoiseBuffers = append(x.NoiseBuffers, b.Name)
		}
	}
	if d, ok := o.DP(); ok {
		x.DP = dpInfo(d)
	}
	return x
}

// fg_set_hypers sets the hypers of the JSON object {"name": value, ...}
// at once, checking ranges, stability and the observation as a whole; on
// an error nothing changes.
//
//export fg_set_hypers
func fg_set_hypers(h C.int64_t, valuesJSON *C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var values map[string]float64
		if e := decodeJSON("hypers", C.GoString(valuesJSON), &values); e != nil {
			return e
		}
		return o.SetHypers(values)
	})
}

// fg_set_dp sets the DP settings: the clipping norm C, the noise
// multiplier σ_DP and the (expected) batch size B.
//
//export fg_set_dp
func fg_set_dp(h C.int64_t, clip, sigma C.double, batch C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return o.SetDP(runtime.DP{ClipNorm: float64(clip), NoiseMultiplier: float64(sigma), BatchSize: int(batch)})
	})
}

// clipGroups is fg_set_dp_groups' request.
type clipGroups struct {
	ClipGroups        []runtime.ClipGroup `json:"clip_groups"`
	NoiseMultiplier   float64             `json:"noise_multiplier"`
	BatchSize         int                 `json:"batch_size"`
	ProportionalNoise bool                `json:"proportional_noise"`
}

// fg_set_dp_groups sets DP settings that clip per group: the JSON object
// {"clip_groups": [{"size", "clip_norm"}, ...], "noise_multiplier",
// "batch_size", "proportional_noise"} (runtime.DP's Groups, whose sizes
// tile the gradient's coordinates in order).
//
//export fg_set_dp_groups
func fg_set_dp_groups(h C.int64_t, request *C.char, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		var r clipGroups
		if e := decodeJSON("clip groups", C.GoString(request), &r); e != nil {
			return e
		}
		if r.ClipGroups == nil {
			return fmt.Errorf("fibergen: clip groups: no clip_groups given")
		}
		return o.SetDP(runtime.DP{Groups: r.ClipGroups, NoiseMultiplier: r.NoiseMultiplier, BatchSize: r.BatchSize, ProportionalNoise: r.ProportionalNoise})
	})
}

// fg_set_noise sets the noise variance σ_w² directly; draw 0 says the
// gradients are privatized already.
//
//export fg_set_noise
func fg_set_noise(h C.int64_t, sigmaW2 C.double, draw C.int, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return o.SetNoise(runtime.Noise{SigmaW2: float64(sigmaW2), Draw: draw != 0})
	})
}

// fg_seed stores the noise seed in *out: 0 in secure mode, which has none.
//
//export fg_seed
func fg_seed(h C.int64_t, out *C.uint64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("seed", unsafe.Pointer(out)); e != nil {
			return e
		}
		*out = C.uint64_t(o.Seed())
		return nil
	})
}

// fg_set_seed fixes the noise seed, before the first step; secure mode
// refuses it (its key comes from the OS).
//
//export fg_set_seed
func fg_set_seed(h C.int64_t, seed C.uint64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.SetSeed(uint64(seed)) })
}

// fg_share_key stores the secure key's four 64-bit words in out[0..3], for
// the ranks of one sharded run to agree on rank 0's (fg_set_key) before the
// first step: for that alone. The key is the run's secret — whoever holds
// it can subtract the noise from what the run releases — and must travel
// only between the ranks' processes, never into a log, a file or an error
// message. Refused in philox mode, after the first step and after a load
// (runtime.Optimizer.ShareKey).
//
//export fg_share_key
func fg_share_key(h C.int64_t, out *C.uint64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("key", unsafe.Pointer(out)); e != nil {
			return e
		}
		k, e := o.ShareKey()
		if e != nil {
			return e
		}
		copy(unsafe.Slice((*uint64)(unsafe.Pointer(out)), len(k)), k[:])
		return nil
	})
}

// fg_set_key sets the secure key to the four 64-bit words at key, rank 0's
// from fg_share_key, before the first step and any load; refused in philox
// mode and for the zero key (runtime.Optimizer.SetKey).
//
//export fg_set_key
func fg_set_key(h C.int64_t, key *C.uint64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("key", unsafe.Pointer(key)); e != nil {
			return e
		}
		var k rng.Key
		copy(k[:], unsafe.Slice((*uint64)(unsafe.Pointer(key)), len(k)))
		return o.SetKey(k)
	})
}

// fg_use_buffers makes the optimizer step nbuf host buffers of n values
// the caller owns (theta, g, the states, in the order of fg_info's
// buffers, each of its fg_info dtype: float32s, or a 16-bit state's
// bfloat16 or float16 values; n the sum of the ranges, where
// fg_register_range gave them), from now until fg_close, and sets the
// states to their initial values (runtime.Optimizer.UseHostBuffers).
//
//export fg_use_buffers
func fg_use_buffers(h C.int64_t, ptrs **C.float, nbuf C.int, n C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		ps, e := bufferPointers("use_buffers", ptrs, nbuf, n)
		if e != nil {
			return e
		}
		return o.UseHostBuffers(typed(o, ps, int(n)))
	})
}

// typed views the caller's buffers at ps, n values each, as the optimizer
// stores them: float32s, or a 16-bit state's n 16-bit values.
func typed(o *runtime.Optimizer, ps []*C.float, n int) []runtime.HostBuffer {
	out := make([]runtime.HostBuffer, len(ps))
	for i, p := range ps {
		out[i] = runtime.HostBuffer{DType: lang.Float32, F32: floats(p, n)}
		if i >= len(o.Manifest().Buffers) {
			continue // the runtime refuses the count
		}
		if d, _ := lang.DTypeNamed(o.Manifest().Buffers[i].DType); d.Narrow() {
			out[i] = runtime.HostBuffer{DType: d}
			if p != nil { // NULL: an empty buffer, n = 0
				out[i].U16 = unsafe.Slice((*uint16)(unsafe.Pointer(p)), n)
			}
		}
	}
	return out
}

// nonFinite stores a *runtime.NonFiniteError's index and value, where
// the caller wants them (not NULL).
func nonFinite(e error, index *C.int64_t, value *C.float) error {
	var nf *runtime.NonFiniteError
	if !errors.As(e, &nf) {
		return e
	}
	if index != nil {
		*index = C.int64_t(nf.Index)
	}
	if value != nil {
		*value = C.float(nf.Value)
	}
	return e
}

// fg_check_gradient returns FG_NONFINITE, with the first bad entry's index
// and value, where fg_step would refuse the gradient; it changes nothing.
//
//export fg_check_gradient
func fg_check_gradient(h C.int64_t, index *C.int64_t, value *C.float, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return nonFinite(o.CheckGradient(), index, value) })
}

// fg_step runs one step on the buffers (fg_use_buffers); FG_NONFINITE
// says the gradient holds a NaN or ±Inf, at *index, and nothing changed.
// It releases the gradient once: what fg_privatize wrote into it (or
// fg_adopt_privatized adopted), or, after fg_gradient_written, what the
// caller wrote — under DP settings only once fg_trust_clipped_gradient
// vouches for it (runtime.Optimizer.Step, docs/runtime.md).
//
//export fg_step
func fg_step(h C.int64_t, index *C.int64_t, value *C.float, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return nonFinite(o.Step(), index, value) })
}

// fg_gradient_written says the caller wrote a new gradient into its
// buffers (runtime.Optimizer.GradientWritten), which the library cannot
// see: a framework's backward pass into them, the caller's own clipped
// mean.
//
//export fg_gradient_written
func fg_gradient_written(h C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.GradientWritten() })
}

// fg_trust_clipped_gradient says the gradient set now is the mean of
// per-example gradients the caller clipped to C itself, which the library
// cannot check (runtime.Optimizer.TrustClippedGradient): under DP settings
// the next step releases it.
//
//export fg_trust_clipped_gradient
func fg_trust_clipped_gradient(h C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.TrustClippedGradient() })
}

// fg_adopt_privatized marks the gradient of h privatized by the last
// fg_privatize (or fg_privatize_device) of src, which must have written
// the memory h's gradient lies in, at h's clipping norm and batch size
// (runtime.Optimizer.AdoptPrivatized): for optimizers over parts of one
// flat gradient, privatized once through one of them.
//
//export fg_adopt_privatized
func fg_adopt_privatized(h, src C.int64_t, err *C.char, errlen C.size_t) C.int {
	s, e := lookup(src)
	if e != nil {
		return status(e, err, errlen)
	}
	so := s.optimizer() // src's handle unlocked again before h's is locked: no lock order to keep
	if so == nil {
		return status(errors.New("fibergen: adopt_privatized: the source optimizer is closed"), err, errlen)
	}
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.AdoptPrivatized(so) })
}

// devicePtrs converts nbuf device pointers.
func devicePtrs(ptrs *C.uint64_t, nbuf C.int) []runtime.DevicePtr {
	out := make([]runtime.DevicePtr, max(int(nbuf), 0))
	if ptrs != nil {
		for i, p := range unsafe.Slice(ptrs, len(out)) {
			out[i] = runtime.DevicePtr(p)
		}
	}
	return out
}

// fg_step_device runs one step of the CUDA kernel on nbuf device buffers
// of n float32s (runtime.Optimizer.StepDevice), the first coordinate at
// global index offset.
//
//export fg_step_device
func fg_step_device(h C.int64_t, ptrs *C.uint64_t, nbuf C.int, n C.int64_t, offset C.uint64_t, index *C.int64_t, value *C.float, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return nonFinite(o.StepDevice(devicePtrs(ptrs, nbuf), int(n), uint64(offset)), index, value)
	})
}

// fg_check_device_gradient returns FG_NONFINITE where fg_step_device would
// refuse the device gradient of n float32s at g; it changes nothing.
//
//export fg_check_device_gradient
func fg_check_device_gradient(h C.int64_t, g C.uint64_t, n C.int64_t, index *C.int64_t, value *C.float, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return nonFinite(o.CheckDeviceGradient(runtime.DevicePtr(g), int(n)), index, value)
	})
}

// fg_init_device_states sets the states among nbuf device buffers to their
// initial values (runtime.Optimizer.InitDeviceStates).
//
//export fg_init_device_states
func fg_init_device_states(h C.int64_t, ptrs *C.uint64_t, nbuf C.int, n C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		return o.InitDeviceStates(devicePtrs(ptrs, nbuf), int(n))
	})
}

// fg_enable_diagnostics turns on the optimizer's clamp_mass diagnostic
// (runtime.Optimizer.EnableDiagnostics).
//
//export fg_enable_diagnostics
func fg_enable_diagnostics(h C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error { return o.EnableDiagnostics() })
}

// fg_clamp_mass stores in *out the clamp_mass of the last step
// (runtime.Optimizer.ClampMass).
//
//export fg_clamp_mass
func fg_clamp_mass(h C.int64_t, out *C.double, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("clamp_mass", unsafe.Pointer(out)); e != nil {
			return e
		}
		v, e := o.ClampMass()
		*out = C.double(v)
		return e
	})
}

// fg_warnings stores in *n how many warnings the optimizer has given since
// the last call (runtime.Optimizer.Warnings: the clamp warning) and copies
// them into buf, one per line, NUL-terminated and cut at buflen; it forgets
// them. A step that warns leaves one here: a caller that fg_info says has
// clamp_warning asks after each step, and nothing is allocated when there
// is none.
//
//export fg_warnings
func fg_warnings(h C.int64_t, buf *C.char, buflen C.size_t, n *C.int64_t, err *C.char, errlen C.size_t) C.int {
	return with(h, err, errlen, func(o *runtime.Optimizer) error {
		if e := required("warnings", unsafe.Pointer(n)); e != nil {
			return e
		}
		w := o.Warnings()
		*n = C.int64_t(len(w))
		if len(w) > 0 {
			writeString(buf, buflen, strings.Join(w, "\n"))
		}
		return nil
	})
}
