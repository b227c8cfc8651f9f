package runtime

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
)

// This file holds per-group clipping (docs/runtime.md, "Per-group
// clipping"; decision 131): DP.Groups splits the coordinates into groups,
// each example is clipped to C_g in every group g, and the noise follows
// the combined sensitivity √Σ C_g².

// ClipGroup is one group of per-group clipping: the next Size coordinates
// of the gradient, in order from global coordinate 0, clipped to ClipNorm.
type ClipGroup struct {
	Size     int     `json:"size"`
	ClipNorm float64 `json:"clip_norm"`
}

// checkGroups checks per-group clipping: no ClipNorm beside the groups,
// each group some coordinates and a finite C_g > 0.
func checkGroups(clip float64, groups []ClipGroup) error {
	if clip != 0 {
		return fmt.Errorf("runtime: DP settings with clip groups take no ClipNorm (%v): each group has its own", clip)
	}
	for i, g := range groups {
		switch {
		case g.Size <= 0:
			return fmt.Errorf("runtime: clip group %d has %d coordinates: want at least 1", i, g.Size)
		case !(g.ClipNorm > 0) || math.IsInf(g.ClipNorm, 0):
			return fmt.Errorf("runtime: clip group %d: clipping norm %v: want a finite value > 0", i, g.ClipNorm)
		}
	}
	return nil
}

// Sensitivity is the ℓ2 sensitivity of the clipped sum: ClipNorm, or with
// groups √Σ C_g² (an example moves every group by at most its C_g).
func (d DP) Sensitivity() float64 {
	return sensitivity(d.ClipNorm, d.Groups)
}

// sensitivity is DP.Sensitivity of clip or groups.
func sensitivity(clip float64, groups []ClipGroup) float64 {
	if groups == nil {
		return clip
	}
	var s float64
	for _, g := range groups {
		s += g.ClipNorm * g.ClipNorm
	}
	return math.Sqrt(s)
}

// GroupSigmaW2 is the noise variance of group g's coordinates: SigmaW2
// (every group the noise of the combined sensitivity), or with
// ProportionalNoise (σ_DP·√G·C_g/B)², each group's noise in proportion to
// its norm. Either is a Gaussian mechanism of noise multiplier σ_DP:
// Σ_g (C_g/σ_g)² = 1/σ_DP² (σ_g the noise of the sum).
func (d DP) GroupSigmaW2(g int) float64 {
	if !d.ProportionalNoise {
		return d.SigmaW2()
	}
	s := d.NoiseMultiplier * math.Sqrt(float64(len(d.Groups))) * d.Groups[g].ClipNorm / float64(d.BatchSize)
	return s * s
}

// ScaleCount is how many scales k examples have under the DP settings: k,
// or k·G under G clip groups (group-major), as PrivatizeStats.Scales,
// PrivatizeScaled and ClipScales hold them.
func (o *Optimizer) ScaleCount(k int) int {
	defer o.lock()()
	return o.scaleCount(k)
}

func (o *Optimizer) scaleCount(k int) int {
	if o.dp == nil || o.dp.Groups == nil {
		return k
	}
	return k * len(o.dp.Groups)
}

// sameClipping reports whether two DP settings clip and average alike: a
// gradient privatized under one is one under the other.
func sameClipping(a, b *DP) bool {
	return a != nil && b != nil && a.ClipNorm == b.ClipNorm && a.BatchSize == b.BatchSize && slices.Equal(a.Groups, b.Groups)
}

// equal reports whether d and e are the same settings.
func (d DP) equal(e DP) bool {
	return sameClipping(&d, &e) && d.NoiseMultiplier == e.NoiseMultiplier && d.ProportionalNoise == e.ProportionalNoise
}

// String describes d as a step uses it.
func (d DP) String() string {
	s := fmt.Sprintf("%s, σ_DP = %v", d.clippingString(), d.NoiseMultiplier)
	if d.ProportionalNoise {
		s += ", proportional noise"
	}
	return s
}

// clippingString describes how d clips.
func (d DP) clippingString() string {
	if d.Groups == nil {
		return fmt.Sprintf("C = %v, B = %d", d.ClipNorm, d.BatchSize)
	}
	return fmt.Sprintf("clip groups %v (size, C), B = %d", d.Groups, d.BatchSize)
}

// noiseRange is the local coordinates [lo, hi) of one noise variance.
type noiseRange struct {
	lo, hi  int
	sigmaW2 float64
}

// noiseRanges splits the coordinates [0, n) of a step whose first is at
// global index offset by the noise variance of the next step: one range,
// or with proportional noise one per clip group that reaches them (the
// groups' coordinates are global). Coordinates past the last group (a
// binding's padding of equal shards), which Privatize never writes, draw
// SigmaW2.
func (o *Optimizer) noiseRanges(n int, offset int64) []noiseRange {
	if o.dp == nil || !o.dp.ProportionalNoise {
		return []noiseRange{{0, n, o.stepNoise().SigmaW2}}
	}
	var out []noiseRange
	add := func(lo, hi int, sigmaW2 float64) {
		if lo, hi = max(lo, 0), min(hi, n); lo < hi {
			out = append(out, noiseRange{lo, hi, sigmaW2})
		}
	}
	b, off := o.dp.bounds(), int(offset)
	for g := range o.dp.Groups {
		add(b[g]-off, b[g+1]-off, o.dp.GroupSigmaW2(g))
	}
	add(b[len(b)-1]-off, n, o.dp.SigmaW2())
	if out == nil { // no coordinates
		return []noiseRange{{0, n, o.dp.SigmaW2()}}
	}
	return out
}

// noiseVariances are the noise variances the next step may draw.
func (o *Optimizer) noiseVariances() []float64 {
	if o.dp == nil || !o.dp.ProportionalNoise {
		return []float64{o.stepNoise().SigmaW2}
	}
	out := []float64{o.dp.SigmaW2()}
	for g := range o.dp.Groups {
		out = append(out, o.dp.GroupSigmaW2(g))
	}
	return out
}

// sigmaW2At is the noise variance of the next step at local coordinate i.
func sigmaW2At(ranges []noiseRange, i int) float64 {
	for _, r := range ranges {
		if i < r.hi {
			return r.sigmaW2
		}
	}
	return ranges[len(ranges)-1].sigmaW2
}

// checkGroupLayout refuses clip groups that cut a registered tensor (a
// tensor is clipped, and its reductions noised, as one).
func (o *Optimizer) checkGroupLayout() error {
	if o.dp == nil || o.dp.Groups == nil {
		return nil
	}
	b, off := o.dp.bounds(), int(o.opts.Offset)
	for _, t := range o.tensors {
		lo, hi := off+t.Offset, off+t.Offset+t.Len
		if i := sort.SearchInts(b, lo+1); i < len(b) && b[i] < hi { // the first group end past lo
			return fmt.Errorf("runtime: a clip group ends inside tensor %s (coordinates [%d, %d)): each tensor is in one group", t.Name, t.Offset, t.Offset+t.Len)
		}
	}
	return nil
}

// errGroupsOnDevice refuses per-group clipping of one device matrix.
var errGroupsOnDevice = errors.New("runtime: per-group clipping (DP.Groups) on a device takes each group's rows as a matrix of their own: privatize with PrivatizeDeviceGroups")

// runGroups runs j clipped per group, on the host, in two passes over
// the rows as without groups: the norms of every group at once, each
// group's chunks counted from its first coordinate (groupNorms), then the
// sum, each group's coordinates with its scales.
func (o *Optimizer) runGroups(j privJob) (PrivatizeStats, error) {
	if j.Device != nil || o.opts.Backend.onDevice() {
		return PrivatizeStats{}, errGroupsOnDevice
	}
	segs, owner, err := o.groupLayout(j)
	if err != nil {
		return PrivatizeStats{}, err
	}
	if j.Segments == nil {
		j.RowStride = j.N // the matrix's rows, a group's columns a segment
	}
	scales := j.Scales
	if scales == nil {
		if scales, err = o.groupNorms(j, segs, owner); err != nil {
			return PrivatizeStats{}, err
		}
	}
	sum := j
	sum.Cur, sum.Look, sum.Segments, sum.Scales, sum.Out = nil, nil, segs, nil, o.destination(j.Out)
	for _, g := range owner {
		sum.SegmentScales = append(sum.SegmentScales, scales[g*j.Batch:(g+1)*j.Batch])
	}
	if _, err := o.back.Privatize(sum); err != nil {
		return PrivatizeStats{}, err
	}
	o.markPrivatized(j)
	return groupStats(scales, j.Batch), nil
}

// groupLayout returns j's rows as segments at their coordinates (a
// matrix's group of columns one segment of stride j.N: rowStride) and the
// clip group of each, refusing groups that do not cover the rows or that
// a segment crosses.
func (o *Optimizer) groupLayout(j privJob) (segs []Segment, owner []int, _ error) {
	if j.Out == nil && o.opts.Offset != 0 {
		return nil, nil, fmt.Errorf("runtime: per-group clipping needs each example's whole rows, whose groups start at global coordinate 0; %s's own gradient is a shard from %d: privatize the whole rows with PrivatizeTo", o.Name(), o.opts.Offset)
	}
	b := o.dp.bounds()
	if b[len(b)-1] != j.N {
		return nil, nil, fmt.Errorf("runtime: the clip groups cover %d coordinates; the per-example gradients have %d", b[len(b)-1], j.N)
	}
	for g := range o.dp.Groups {
		gs, err := groupSegments(j, b[g], b[g+1])
		if err != nil {
			return nil, nil, err
		}
		for _, s := range gs {
			s.Offset += b[g]
			segs, owner = append(segs, s), append(owner, g)
		}
	}
	return segs, owner, nil
}

// groupNorms computes every group's scales, group-major, from one norms
// pass: the segments moved to a layout in which each group starts on a
// chunk boundary, so that its chunks are those of its coordinates alone,
// as if privatized by themselves; each example's norm² in group g is the
// float64 sum of g's chunks in order (reduce.PrivatizeScales).
func (o *Optimizer) groupNorms(j privJob, segs []Segment, owner []int) ([]float32, error) {
	start, base := o.dp.bounds(), make([]int, len(o.dp.Groups)) // each group's first coordinate, and in that layout
	at := 0
	for g, grp := range o.dp.Groups {
		base[g], at = at, at+ceilDiv(grp.Size, reduce.ReduceChunk)*reduce.ReduceChunk
	}
	norms := j
	norms.Cur, norms.Look, norms.Scales, norms.NormsOnly = nil, nil, nil, true
	norms.N, norms.Segments = at, make([]Segment, len(segs))
	for i, s := range segs {
		s.Offset += base[owner[i]] - start[owner[i]]
		norms.Segments[i] = s
	}
	partials, err := o.back.Privatize(norms)
	if err != nil {
		return nil, err
	}
	return groupScalesOf(partials, j.Batch, at, base, o.dp.Groups)
}

// groupScalesOf folds the norm partials of k examples ([k][chunks of n])
// into each group's scales, group g's chunks from base[g]; an example not
// finite in any group is a *NonFiniteExampleError.
func groupScalesOf(partials []float32, k, n int, base []int, groups []ClipGroup) ([]float32, error) {
	nchunks := reduce.ReduceChunks(n)
	scales := make([]float32, k*len(groups))
	for g, grp := range groups {
		c0, gc := base[g]/reduce.ReduceChunk, reduce.ReduceChunks(grp.Size)
		for x := range k { // example x alone: its group's chunks, read in place
			reduce.PrivatizeScales(scales[g*k+x:], partials[x*nchunks+c0:], gc, grp.ClipNorm, 0, 1)
		}
		if bad := backend.FirstNaN(scales[g*k : (g+1)*k]); bad >= 0 {
			return nil, &NonFiniteExampleError{Example: bad}
		}
	}
	return scales, nil
}

// runGroupJobs runs one job a clip group: every group's scales first
// (unless given), so that an example that is not finite refuses the whole
// privatization before anything is written, then each group's sum into its
// coordinates. The scales are group-major: group g's k at [g·k, (g+1)·k).
func (o *Optimizer) runGroupJobs(jobs []privJob, k int, scales []float32) (PrivatizeStats, error) {
	if scales == nil {
		var err error
		if scales, err = o.groupScales(jobs, k); err != nil {
			return PrivatizeStats{}, err
		}
	}
	for g, gj := range jobs {
		gj.Scales = scales[g*k : (g+1)*k]
		if _, err := o.back.Privatize(gj); err != nil {
			return PrivatizeStats{}, err
		}
	}
	return groupStats(scales, k), nil
}

// groupScales computes the scales of every group's job, group-major.
func (o *Optimizer) groupScales(jobs []privJob, k int) ([]float32, error) {
	scales := make([]float32, 0, k*len(jobs))
	for _, gj := range jobs {
		gj.ScalesOnly = true
		s, err := o.back.Privatize(gj)
		if err != nil {
			return nil, err
		}
		scales = append(scales, s...)
	}
	return scales, nil
}

// groupStats describes a privatization by its group-major scales: an
// example is clipped where any group of it is.
func groupStats(scales []float32, k int) PrivatizeStats {
	st := PrivatizeStats{Scales: scales}
	for x := range k {
		for g := x; g < len(scales); g += k {
			if scales[g] < 1 {
				st.Clipped++
				break
			}
		}
	}
	return st
}

// bounds are the groups' global coordinates: group g is
// [bounds[g], bounds[g+1]), and bounds[len(d.Groups)] the coordinates they
// cover.
func (d DP) bounds() []int {
	b := make([]int, len(d.Groups)+1)
	for g, grp := range d.Groups {
		b[g+1] = b[g] + grp.Size
	}
	return b
}

// groupSegments returns the rows of j's coordinates [lo, hi) as segments
// from 0: the matrix's columns as one segment (of stride j.N), or j's
// segments in the range, which none may cross.
func groupSegments(j privJob, lo, hi int) ([]Segment, error) {
	if j.Segments == nil {
		s := Segment{Size: hi - lo}
		if j.Batch > 0 {
			s.Cur = j.Cur[lo:]
			if j.Look != nil {
				s.Look = j.Look[lo:]
			}
		}
		return []Segment{s}, nil
	}
	var out []Segment
	for i, s := range j.Segments {
		end := s.Offset + s.Size
		switch {
		case s.Size == 0 || end <= lo || s.Offset >= hi:
			continue
		case s.Offset < lo || end > hi:
			return nil, fmt.Errorf("runtime: segment %d (coordinates [%d, %d)) crosses the clip group [%d, %d): each tensor is in one group", i, s.Offset, end, lo, hi)
		}
		s.Offset -= lo
		out = append(out, s)
	}
	return out, nil
}
