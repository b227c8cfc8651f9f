package runtime

import (
	"errors"
	"fmt"

	"github.com/fibergen/fibergen/runtime/backend"
)

// PrivatizeDevice is PrivatizeTo on device memory the trainer owns (as
// for StepDevice): cur and, for a two-point optimizer, look (0: none) hold
// k rows of n float32s each, and the clipped sum over DP.BatchSize goes
// into the n floats at out; scales nil has them computed and checked (an
// example that is not finite is a *NonFiniteExampleError, and out is
// unchanged), else they are used as given — a non-finite row then reaches
// out, where the step's guard refuses it. It waits for the device.
func (o *Optimizer) PrivatizeDevice(out DevicePtr, n int, cur, look DevicePtr, k int, scales []float32) (_ PrivatizeStats, err error) {
	defer o.lock()()
	if o.dp == nil {
		return PrivatizeStats{}, errors.New("runtime: set the DP settings (SetDP) before PrivatizeDevice: they give C and B")
	}
	if n < 0 || k < 0 || n > 0 && out == 0 || n > 0 && k > 0 && cur == 0 {
		return PrivatizeStats{}, fmt.Errorf("runtime: PrivatizeDevice: %d examples of %d values at %#x into %#x", k, n, uint64(cur), uint64(out))
	}
	if err := o.ready(); err != nil {
		return PrivatizeStats{}, err
	}
	if o.dp.Groups != nil {
		return PrivatizeStats{}, errGroupsOnDevice
	}
	j, lookOnly, err := o.privShape(k, n, look != 0)
	if err == nil && scales != nil {
		err = o.checkScales(scales, k)
	}
	if err != nil {
		return PrivatizeStats{}, err
	}
	cur, look = rowsRead(j, lookOnly, cur, look)
	j.Scales = scales
	j.Device = &backend.DeviceRows{Cur: cur, Look: look, Out: out}
	got, err := o.back.Privatize(j)
	if err != nil {
		return PrivatizeStats{}, err
	}
	o.privatized(deviceRange(out, n), false)
	return statsOf(got), nil
}
