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
		err = o.takeScales(scales, k)
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

// PrivatizeDeviceGroups is PrivatizeDevice under per-group clipping
// (DP.Groups): cur[g] and, for a two-point optimizer, look[g] (nil: none)
// hold group g's k rows of its DP.Groups[g].Size values, a matrix of their
// own in device memory (the trainer gathers each group's columns, as it
// would gather the whole row), and group g's clipped sum goes into its
// coordinates of the n floats at out, n the groups' sum. The scales, given
// or returned, are group-major; every group's are computed before any sum,
// so an example that is not finite in any group leaves out unchanged.
func (o *Optimizer) PrivatizeDeviceGroups(out DevicePtr, n int, cur, look []DevicePtr, k int, scales []float32) (PrivatizeStats, error) {
	defer o.lock()()
	jobs, err := o.deviceGroupJobs(out, n, cur, look, k)
	if err == nil && scales != nil {
		err = o.takeScales(scales, k)
	}
	if err != nil {
		return PrivatizeStats{}, err
	}
	st, err := o.runGroupJobs(jobs, k, scales)
	if err == nil {
		o.privatized(deviceRange(out, n), false)
	}
	return st, err
}

// deviceGroupJobs checks PrivatizeDeviceGroups' arguments and returns its
// job a group.
func (o *Optimizer) deviceGroupJobs(out DevicePtr, n int, cur, look []DevicePtr, k int) ([]privJob, error) {
	if o.dp == nil || o.dp.Groups == nil {
		return nil, errors.New("runtime: PrivatizeDeviceGroups clips per group: set DP settings with DP.Groups first (SetDP)")
	}
	groups, b := o.dp.Groups, o.dp.bounds()
	switch {
	case len(cur) != len(groups) || look != nil && len(look) != len(groups):
		return nil, fmt.Errorf("runtime: PrivatizeDeviceGroups: %d current and %d look-ahead matrices for %d clip groups", len(cur), len(look), len(groups))
	case n != b[len(groups)] || k < 0 || n > 0 && out == 0:
		return nil, fmt.Errorf("runtime: PrivatizeDeviceGroups: %d examples of %d values into %#x; the clip groups cover %d", k, n, uint64(out), b[len(groups)])
	}
	if err := o.ready(); err != nil {
		return nil, err
	}
	if err := o.checkGroupLayout(); err != nil {
		return nil, err
	}
	var jobs []privJob
	for g, grp := range groups {
		var lk DevicePtr
		if look != nil {
			lk = look[g]
		}
		if k > 0 && cur[g] == 0 {
			return nil, fmt.Errorf("runtime: PrivatizeDeviceGroups: group %d's rows at address 0", g)
		}
		j, lookOnly, err := o.privShape(k, grp.Size, lk != 0)
		if err != nil {
			return nil, err
		}
		c, l := rowsRead(j, lookOnly, cur[g], lk)
		j.Clip, j.Device = grp.ClipNorm, &backend.DeviceRows{Cur: c, Look: l, Out: out + DevicePtr(4*b[g])}
		jobs = append(jobs, j)
	}
	return jobs, nil
}
