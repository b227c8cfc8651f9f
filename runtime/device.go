package runtime

import (
	"fmt"
	"math"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cuda"
)

// DevicePtr is an address in the memory of the optimizer's device: the
// opaque device pointer StepDevice, InitDeviceStates, CheckDeviceGradient
// and PrivatizeDevice take (a CUdeviceptr's value on CUDA, e.g.
// runtime.DevicePtr(p) of a cudadrv.DevicePtr p, or of
// torch.Tensor.data_ptr()).
type DevicePtr = backend.DevicePtr

// CUDABlock is the number of threads per block of every kernel the CUDA
// backend launches, or the largest multiple of the warp a kernel's
// registers allow when that is less (cuda.Block).
const CUDABlock = cuda.Block

// Trainer-owned device buffers: a trainer with its own GPU allocator (a
// framework's caching allocator, an arena of its own) keeps the parameters,
// the gradient and the optimizer's states in device memory it owns and has
// the optimizer step them in place with StepDevice, with no copy through the
// runtime's flat host buffers. StepDevice's documentation is the guide.

// StepDevice runs one step of the optimizer's CUDA kernel on device buffers
// the caller owns, in place: bufs holds theta, g, then the states, in the
// order of Manifest().Buffers (ir.FirstState + the number of states pointers); n is the
// number of coordinates in each, and offset the global index of their first
// coordinate, which places the DP noise: one optimizer per shard of a flat
// parameter vector, each with the shard's offset and the same seed, draws
// exactly the noise one optimizer over the whole vector would (Options.Offset
// does not apply here). It uses the same host scalars, seed and step counter
// as Step, and the same guard: if an entry of g[0:n] is NaN or ±Inf, the
// step changes nothing (buffers, step counter, noise position) and returns a
// *NonFiniteError whose Tensor is the gradient buffer's name and Index the
// entry's index in g. The step counter advances only when the step
// succeeds; n == 0 just advances it. It releases g once, as Step does
// (release.go): what PrivatizeDevice (or AdoptPrivatized) wrote into the
// memory g[0:n] lies in, or, after GradientWritten, what the trainer wrote
// — under DP settings only with TrustClippedGradient.
//
// The optimizer must be opened with a device backend (CUDA; PTXSim with its
// simulated device's memory) and have no tensors with
// values of its own (Register); ranges (RegisterRange) must cover n, and
// each steps with its own hypers (the backend launches once per setting).
// Its first StepDevice (or InitDeviceStates) starts the backend: it loads
// the driver and retains the primary context of device Options.Device.
// The contract on the buffers:
//
//   - They are device memory of that device usable from its primary
//     context — memory from cuMemAlloc or cudaMalloc in the primary context
//     (the CUDA runtime API's context, the one PyTorch and JAX use), or
//     managed memory — each at least 4·n bytes, 4-byte aligned. StepDevice
//     checks the alignment, that no pointer is 0, and that the n-float
//     ranges do not overlap; it cannot check sizes: a buffer shorter than n
//     floats makes the kernel fault, which leaves the device's primary
//     context, the trainer's too, unusable until the process exits.
//   - They must not overlap (the kernel reads g and some states through the
//     non-coherent cache and writes theta and the states).
//   - For the vector path (128-bit loads and stores, one Philox call per
//     four coordinates on aligned groups) every buffer should be 16-byte
//     aligned and offset a multiple of 4. Other alignments give the same
//     bits, through scalar accesses, only slower.
//   - The kernels run on the legacy default stream of the primary context,
//     which waits for work on other blocking streams but not for work on
//     non-blocking streams (cudaStreamNonBlocking, e.g. PyTorch's side
//     streams): the trainer finishes the work that writes g (and any use of
//     theta) on such a stream before it calls StepDevice. StepDevice waits
//     for its kernels before it returns, so the buffers are ready for the
//     trainer's next work on any stream.
//   - The states start at their initial values: InitDeviceStates sets them.
//
// StepDevice is not safe for concurrent use with other methods of o.
//
// A trainer uses it so:
//
//	o, err := runtime.Open("generated/fiber", runtime.Options{Backend: runtime.CUDA, Device: 0})
//	err = o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 1.1, BatchSize: 256})
//	err = o.SetSeed(seed) // the same seed on every shard
//	// bufs: theta, g, then one buffer per state, in the order of
//	// o.Manifest().Buffers, n float32s each of the trainer's device memory.
//	err = o.InitDeviceStates(bufs, n) // once, before the first step
//	for each batch {
//		// The runtime clips the batch's per-example rows (device memory)
//		// into bufs[ir.GradBuffer]:
//		_, err = o.PrivatizeDevice(bufs[ir.GradBuffer], n, rows, 0, k, nil)
//		// (or the trainer writes its own clipped mean there, waits for
//		// that work and says so: o.GradientWritten(); o.TrustClippedGradient())
//		err = o.StepDevice(bufs, n, offset)
//		var nf *runtime.NonFiniteError
//		if errors.As(err, &nf) {
//			// nothing changed: skip the batch
//		}
//	}
//	err = o.Close() // the trainer's buffers stay the trainer's
//
// The buffers are the trainer's to checkpoint; the optimizer's Save and
// Load (with no tensor registered) carry the rest: the step counter, the
// seed, the hypers and the DP settings.
//
// A trainer in Go allocates in the same context through cudadrv:
// cudadrv.Load, Driver.Device(Options.Device), Device.Context (a retain of
// the primary context), Context.Alloc, and passes DevicePtr(p) of each
// buffer p.
func (o *Optimizer) StepDevice(bufs []DevicePtr, n int, offset uint64) (err error) {
	defer o.lock()()
	if err := o.checkDevice("StepDevice", bufs, n); err != nil {
		return err
	}
	if offset > math.MaxInt64-uint64(n) {
		return fmt.Errorf("runtime: StepDevice: global offset %d with %d coordinates passes 2^63-1", offset, n)
	}
	if err := o.canStep(); err != nil {
		return err
	}
	if err := o.ready(); err != nil {
		return err
	}
	if err := o.releasableAt(deviceRange(bufs[ir.GradBuffer], n)); err != nil {
		return err
	}
	if n > 0 {
		mem := backend.Memory{Device: bufs, N: n}
		if err := o.deviceGradient(mem); err != nil {
			return err
		}
		a, err := o.reduced(mem, o.deviceArgs(n, offset))
		if err != nil {
			return err
		}
		if err := o.stepOn(mem, a); err != nil {
			return err
		}
		defer func() { err = o.deviceDiagnostics(mem, a, err) }() // once the step counts (EnableDiagnostics)
	}
	o.t++
	o.released()
	return nil
}

// deviceArgs are the arguments of the next step over n coordinates of the
// trainer's device buffers, the first at global index offset: the ranges'
// segments (which cover n: checkRangesLen), or the optimizer's hypers,
// each cut where the noise's variance changes. The backend launches once
// per segment.
func (o *Optimizer) deviceArgs(n int, offset uint64) backend.Step {
	ts := o.tensors
	if !o.hasRanges() {
		ts = nil
	}
	return o.argsOver(n, int64(offset), ts)
}

// CheckDeviceGradient returns the error that StepDevice would return for
// the gradient buffer g of n coordinates — a *NonFiniteError, or the
// refusal of a gradient stepped on already or not privatized — or nil,
// changing nothing: a trainer stepping several optimizers as one (a
// binding's parameter groups) checks them all before it steps any. It
// waits for the device.
func (o *Optimizer) CheckDeviceGradient(g DevicePtr, n int) error {
	defer o.lock()()
	if !o.opts.Backend.onDevice() || n < 0 || n > 0 && (g == 0 || g%4 != 0) || n > math.MaxInt64/4 {
		return fmt.Errorf("runtime: CheckDeviceGradient: %d coordinates at %#x on backend %q", n, uint64(g), o.opts.Backend)
	}
	err := o.checkRangesLen("CheckDeviceGradient", n) // as StepDevice checks them
	if err == nil {
		err = o.ready()
	}
	if err == nil {
		err = o.releasableAt(deviceRange(g, n))
	}
	if err != nil || n == 0 {
		return err
	}
	bufs := make([]DevicePtr, len(o.m.Buffers))
	bufs[ir.GradBuffer] = g
	return o.deviceGradient(backend.Memory{Device: bufs, N: n})
}

// deviceGradient runs the backend's non-finite guard on the gradient
// buffer of mem.
func (o *Optimizer) deviceGradient(mem backend.Memory) error {
	bad, v, err := o.back.FirstNonFinite(mem)
	if err != nil || bad < 0 {
		return err
	}
	return &NonFiniteError{Tensor: o.m.Buffers[ir.GradBuffer].Name, Index: bad, Value: v}
}

// InitDeviceStates sets the states in bufs (laid out as for StepDevice:
// theta, g, states; theta and g are not touched) to their initial values
// under the current hypers (each range's under its own), for n
// coordinates, and waits for the device. Call it before the first
// StepDevice, after any SetHyper the initial values depend on; the same
// contract on the buffers applies.
func (o *Optimizer) InitDeviceStates(bufs []DevicePtr, n int) error {
	defer o.lock()()
	if err := o.checkDevice("InitDeviceStates", bufs, n); err != nil {
		return err
	}
	if err := o.ready(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	// Every coordinate of a state starts at the same value, or each range's
	// at its own: the reference computes it on one coordinate.
	if err := o.fillStates(bufs, 0, n, o.hypers); err != nil {
		return err
	}
	for _, t := range o.tensors {
		if t.hypers != nil {
			if err := o.fillStates(bufs, t.Offset, t.Len, t.hypers); err != nil {
				return fmt.Errorf("%w (tensor %s)", err, t.Name)
			}
		}
	}
	return nil
}

// fillStates sets the states among the device buffers bufs to their
// initial values under hypers h on the n coordinates from lo, through the
// backend's Fill on the buffers from lo.
func (o *Optimizer) fillStates(bufs []DevicePtr, lo, n int, h []float64) error {
	values, err := o.initialValues(h)
	if err != nil || n == 0 {
		return err
	}
	mem := backend.Memory{Device: make([]DevicePtr, len(bufs)), N: n}
	for i, p := range bufs {
		mem.Device[i] = p.Add(o.storages[i].DType.Size() * lo)
	}
	for i, v := range values {
		if err := o.back.Fill(mem, ir.FirstState+i, v); err != nil {
			return fmt.Errorf("runtime: InitDeviceStates: %s: %w", o.m.Buffers[ir.FirstState+i].Name, err)
		}
	}
	return nil
}

// checkDevice checks what can be checked of StepDevice's and
// InitDeviceStates' arguments without the driver.
func (o *Optimizer) checkDevice(what string, bufs []DevicePtr, n int) error {
	if !o.opts.Backend.onDevice() {
		return fmt.Errorf("runtime: %s needs an optimizer opened with a device backend (CUDA, PTXSim), not %q", what, o.opts.Backend)
	}
	if o.ownsTensors() {
		return fmt.Errorf("runtime: %s: %s has registered tensors, which Step steps; StepDevice is for an optimizer without them", what, o.Name())
	}
	if err := o.checkRangesLen(what, n); err != nil {
		return err
	}
	if want := ir.FirstState + o.prog.NumStates(); len(bufs) != want {
		var names []string
		for _, b := range o.m.Buffers {
			names = append(names, b.Name)
		}
		return fmt.Errorf("runtime: %s: %d buffers given, %s takes %d: %v", what, len(bufs), o.Name(), want, names)
	}
	if n < 0 {
		return fmt.Errorf("runtime: %s: %d coordinates", what, n)
	}
	if n == 0 {
		return nil
	}
	if n > math.MaxInt64/4 {
		return fmt.Errorf("runtime: %s: %d coordinates", what, n)
	}
	return o.checkDevicePtrs(what, bufs, n)
}

// checkDevicePtrs refuses device buffers of n values (4 bytes each; 2 for
// a state stored as a 16-bit type) that are null, misaligned, past the end
// of the address space or overlapping.
func (o *Optimizer) checkDevicePtrs(what string, bufs []DevicePtr, n int) error {
	bytes := func(i int) uint64 { return uint64(o.storages[i].DType.Size()) * uint64(n) }
	for i, p := range bufs {
		name, align := o.bufName(i), uint64(o.storages[i].DType.Size())
		switch {
		case p == 0:
			return fmt.Errorf("runtime: %s: buffer %s is a null pointer", what, name)
		case uint64(p)%align != 0:
			return fmt.Errorf("runtime: %s: buffer %s at %#x is not %d-byte aligned", what, name, uint64(p), align)
		case uint64(p) > math.MaxUint64-bytes(i):
			return fmt.Errorf("runtime: %s: buffer %s at %#x cannot hold %d values", what, name, uint64(p), n)
		}
		for j, q := range bufs[:i] {
			if uint64(p) < uint64(q)+bytes(j) && uint64(q) < uint64(p)+bytes(i) {
				return fmt.Errorf("runtime: %s: buffers %s (%#x) and %s (%#x) of %d values overlap",
					what, o.bufName(j), uint64(q), name, uint64(p), n)
			}
		}
	}
	return nil
}

func (o *Optimizer) bufName(i int) string {
	if i < len(o.m.Buffers) {
		return o.m.Buffers[i].Name
	}
	return fmt.Sprint(i)
}

// DeviceCopyBandwidth is the baseline a CUDA step is measured against: the
// bandwidth in GB/s (10^9 bytes) of a device-to-device copy of half bytes
// into the other half on the device, over reps copies, and the device's
// name.
func DeviceCopyBandwidth(device, half, reps int) (gbps float64, name string, err error) {
	return cuda.CopyBandwidth(nil, device, half, reps)
}
