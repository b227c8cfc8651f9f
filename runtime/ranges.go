package runtime

import (
	"errors"
	"fmt"
	"github.com/fibergen/fibergen/runtime/backend"
	"math"
	"slices"
)

// Tensors over the trainer's buffers. An optimizer that steps buffers the
// trainer owns (UseBuffers on the host, StepDevice on CUDA) has no values
// of its own to register, but its coordinates may still fall into tensors
// with hypers of their own (a binding's parameter groups): RegisterRange
// names such a range, and Tensor.SetHypers gives it its hypers, as for a
// registered tensor. The step then reads each range's host scalars, and
// the rules of one optimizer hold across the ranges by construction: one
// observation (a hyper the observation reads cannot differ per tensor),
// one privatization clipping every example over all of them, one step
// that changes all or nothing, one checkpoint that carries the layout and
// every range's hypers.

// RegisterRange adds a tensor of n coordinates that holds no values of its
// own: the range [Offset, Offset+n) of the buffers the trainer gives
// (UseBuffers, StepDevice), which must then hold Len() coordinates.
// Tensors are registered before the buffers are given; ranges and
// tensors with values (Register) do not mix. The trainer writes the
// range's gradient into its own buffer (GradientWritten), not with SetGrad.
func (o *Optimizer) RegisterRange(name string, n int) (*Tensor, error) {
	defer o.lock()()
	switch {
	case n < 0:
		return nil, fmt.Errorf("runtime: register range %s: %d coordinates", name, n)
	case o.bufs != nil || o.back != nil:
		return nil, fmt.Errorf("runtime: register range %s: ranges are registered before the buffers are given", name)
	case o.ownsTensors():
		return nil, fmt.Errorf("runtime: register range %s: %s has tensors with values of its own (Register), which ranges do not mix with", name, o.Name())
	}
	if err := o.registered(name); err != nil {
		return nil, err
	}
	return o.addTensor(&Tensor{Name: name, Len: n, ranged: true}), nil
}

// ownsTensors reports whether the optimizer has tensors with values of
// their own (Register), which own its buffers.
func (o *Optimizer) ownsTensors() bool {
	return len(o.tensors) > 0 && !o.tensors[0].ranged // Register and RegisterRange refuse to mix
}

// hasRanges reports whether the optimizer's tensors are ranges of the
// trainer's buffers (RegisterRange).
func (o *Optimizer) hasRanges() bool { return len(o.tensors) > 0 && o.tensors[0].ranged }

// checkRangesLen refuses trainer's buffers of n coordinates where ranges
// cover another number.
func (o *Optimizer) checkRangesLen(what string, n int) error {
	if o.hasRanges() && n != o.n {
		return fmt.Errorf("runtime: %s: buffers of %d coordinates given, the ranges of %s (RegisterRange) cover %d", what, n, o.Name(), o.n)
	}
	return nil
}

// ownBufferLen is the length of the flat buffers the optimizer allocates
// itself: none for ranges, whose values are the trainer's.
func (o *Optimizer) ownBufferLen() int {
	if o.hasRanges() {
		return 0
	}
	return o.n
}

// errRangesNeedBuffers is Step's refusal on ranges without the trainer's
// host buffers.
var errRangesNeedBuffers = errors.New("its tensors are ranges of the trainer's buffers (RegisterRange): give them with UseBuffers, or step device buffers with StepDevice")

// initStates sets the states (ABI order, the trainer's or the optimizer's
// own) to their initial values, each tensor's coordinates under its own
// hypers.
func (o *Optimizer) initStates(states []backend.Host) error {
	vals, err := o.initialValues(o.hypers)
	if err != nil {
		return err
	}
	for i, s := range states {
		s.Fill(vals[i])
	}
	for _, t := range o.tensors {
		if t.hypers == nil || t.Len == 0 {
			continue
		}
		vals, err := o.initialValues(t.hypers)
		if err != nil {
			return fmt.Errorf("runtime: tensor %s: %w", t.Name, err)
		}
		for i, s := range states {
			s.Slice(t.Offset, t.Offset+t.Len).Fill(vals[i])
		}
	}
	return nil
}

// initialValues is each state's initial value under hypers h.
func (o *Optimizer) initialValues(h []float64) ([]float32, error) {
	states := make([][]float32, o.prog.NumStates())
	for i := range states {
		states[i] = make([]float32, 1)
	}
	if err := o.prog.Init(h, states); err != nil {
		return nil, err
	}
	out := make([]float32, len(states))
	for i, s := range states {
		out[i] = s[0]
	}
	return out, nil
}

// setting is the hypers the tensor steps with: its own, else the
// optimizer's.
func (t *Tensor) setting() []float64 {
	if t.hypers != nil {
		return t.hypers
	}
	return t.o.hypers
}

// HyperValues returns every hyper's name and the value the tensor steps
// with: its own where SetHypers set one (or derived from them), else the
// optimizer's.
func (t *Tensor) HyperValues() []Hyper {
	o := t.o
	defer o.lock()()
	h := t.setting()
	out := make([]Hyper, len(h))
	for i, hy := range o.prog.Func.Hypers {
		out[i] = Hyper{Name: hy.Name, Value: h[i]}
	}
	return out
}

// shardAlign is the multiple of coordinates at which every shard starts:
// a Philox group of four draws (rng.Normal4), so that each shard draws
// whole groups and the CUDA kernel's vector path, which wants an offset
// that is a multiple of 4, runs on every shard. A secure octet of eight
// may straddle two shards: both compute its block, the same bits, and
// keep their halves.
const shardAlign = 4

// ShardLayout is where one worker's shard lies in a flat buffer sharded
// over world workers (ZeRO-1: each keeps the states of its shard only).
type ShardLayout struct {
	// Slice is every shard's length, the same for all, a multiple of 4:
	// the flat buffers hold world·Slice coordinates, the ones past the
	// tensors' padding that no step touches. With Bounds (ShardWhole) the
	// shards' lengths differ and the buffers hold Bounds[world]
	// coordinates; Slice is then the longest shard's, rounded up to 4.
	Slice int `json:"slice"`
	// Lo and Hi are the shard's coordinates [Lo, Hi) of the flat buffers.
	Lo int `json:"lo"`
	Hi int `json:"hi"`
	// Parts are each tensor's coordinates [lo, hi) in the shard (empty
	// where it has none, at the shard's start or end), in
	// order: consecutive, from Lo, so the shard's optimizer registers them
	// as ranges of hi−lo coordinates and steps buffers of their sum.
	Parts [][2]int `json:"parts"`
	// Bounds are where every worker's shard starts, and the last one ends,
	// where the shards are of unequal length (ShardWhole): worker r's is
	// [Bounds[r], Bounds[r+1]).
	Bounds []int `json:"bounds,omitempty"`
}

// Shard lays out tensors of the given sizes, consecutive in one flat
// buffer, over world workers and returns worker rank's shard.
func Shard(sizes []int, world, rank int) (ShardLayout, error) {
	n, err := shardTotal(sizes, world, rank)
	if err != nil {
		return ShardLayout{}, err
	}
	per := (n + world - 1) / world
	per += -per & (shardAlign - 1)
	l := ShardLayout{Slice: per, Lo: rank * per, Hi: (rank + 1) * per}
	l.Parts = shardParts(sizes, l.Lo, l.Hi)
	return l, nil
}

// ShardWhole is Shard for an optimizer with per-tensor reductions (lamb's
// norms): it cuts the shards only where a tensor ends, at the end nearest
// each worker's even share, so that each tensor is wholly one worker's and
// its sums need no other worker's coordinates. The shards are of unequal
// length (Bounds), start at any coordinate (the CUDA kernel's vector path
// then runs only where a shard's offset is a multiple of 4: the same bits,
// slower), and balance as well as the tensors' sizes let them.
func ShardWhole(sizes []int, world, rank int) (ShardLayout, error) {
	n, err := shardTotal(sizes, world, rank)
	if err != nil {
		return ShardLayout{}, err
	}
	ends := []int{0}
	for _, s := range sizes {
		ends = append(ends, ends[len(ends)-1]+s)
	}
	l := ShardLayout{Bounds: []int{0}}
	for r := 1; r < world; r++ {
		l.Bounds = append(l.Bounds, nearestEnd(ends, float64(r)*float64(n)/float64(world)))
	}
	l.Bounds = append(l.Bounds, n)
	for r := range world {
		l.Slice = max(l.Slice, l.Bounds[r+1]-l.Bounds[r])
	}
	l.Slice += -l.Slice & (shardAlign - 1)
	l.Lo, l.Hi = l.Bounds[rank], l.Bounds[rank+1]
	l.Parts = shardParts(sizes, l.Lo, l.Hi)
	return l, nil
}

// nearestEnd is the tensor end in ends (ascending) nearest target, the
// lower one of two as near.
func nearestEnd(ends []int, target float64) int {
	i, _ := slices.BinarySearch(ends, int(math.Ceil(target)))
	if i == len(ends) || i > 0 && target-float64(ends[i-1]) <= float64(ends[i])-target {
		i--
	}
	return ends[i]
}

// shardTotal checks Shard's arguments and returns the tensors' total.
func shardTotal(sizes []int, world, rank int) (int, error) {
	if world < 1 || world > maxCoords || rank < 0 || rank >= world {
		return 0, fmt.Errorf("runtime: shard %d of %d workers", rank, world)
	}
	n := 0
	for i, s := range sizes {
		if s < 0 || s > maxCoords-n {
			return 0, fmt.Errorf("runtime: tensor %d of %d coordinates (after %d)", i, s, n)
		}
		n += s
	}
	return n, nil
}

// shardParts are each tensor's coordinates in the shard [lo, hi).
func shardParts(sizes []int, lo, hi int) [][2]int {
	var parts [][2]int
	start := 0
	for _, s := range sizes {
		a := min(max(start, lo), hi) // a tensor past the shard: an empty part at its end
		parts = append(parts, [2]int{a, max(min(start+s, hi), a)})
		start += s
	}
	return parts
}

// maxCoords is the most coordinates a sharded buffer may hold: room for
// the padding of every shard, in an int.
const maxCoords = 1 << 60
