package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime/backend"
)

// Per-tensor hypers: a tensor may step with some hypers of its own (weight
// decay 0 for biases and norm layers is the common case), the optimizer's
// hypers for the rest. The DP part stays joint: Privatize clips each
// example over all tensors at once, and the noise of a coordinate depends
// on its global index only, so the groups change which host scalars each
// coordinate's step reads and nothing else.

// SetHypers overrides hypers for the tensor's coordinates: they step with
// the optimizer's hypers (SetHyper, whatever they become) but these
// values. The setting is checked as SetHypers checks the optimizer's (each
// range, stable filters, finite host values); a hyper the observation
// reads cannot differ per tensor, since one observation forms every
// example's gradient. An empty map removes the overrides. On an error
// nothing changes.
func (t *Tensor) SetHypers(values map[string]float64) error {
	return t.o.SetTensorsHypers([]*Tensor{t}, values)
}

// SetTensorsHypers is SetHypers for each of the tensors ts, of o, with
// the same values, checked once (the check depends on o's hypers and the
// values alone): a parameter group whose parameters are tensors of their
// own takes a scheduler's hypers at the cost of one tensor. On an error
// nothing changes.
func (o *Optimizer) SetTensorsHypers(ts []*Tensor, values map[string]float64) error {
	defer o.lock()()
	for _, t := range ts {
		if t.o != o {
			return fmt.Errorf("runtime: tensor %s is not %s's", t.Name, o.Name())
		}
	}
	var h []float64
	if len(values) > 0 && len(ts) > 0 {
		var err error
		if h, err = o.tensorHypers(o.hypers, o.set, values); err != nil {
			return fmt.Errorf("runtime: tensor %s: %w", ts[0].Name, err)
		}
	}
	var over map[string]float64 // shared, as h is: nothing changes either in place
	if h != nil {
		over = maps.Clone(values)
	}
	for _, t := range ts {
		t.overrides, t.hypers = over, h
	}
	return nil
}

// Hypers returns the tensor's overrides (SetHypers); nil without any.
func (t *Tensor) Hypers() map[string]float64 {
	defer t.o.lock()()
	return maps.Clone(t.overrides)
}

// tensorHypers returns the hypers base with the overrides applied, and
// the derived hypers that neither set nor the overrides name recomputed
// (ir.Func.Derive), checked.
func (o *Optimizer) tensorHypers(base []float64, set map[string]bool, over map[string]float64) ([]float64, error) {
	observed := observeHypers(o.prog.Func)
	for _, name := range slices.Sorted(maps.Keys(over)) {
		if observed[name] {
			return nil, fmt.Errorf("hyper %s shapes the observation, which is one for all tensors; it cannot differ per tensor", name)
		}
	}
	h, _, err := o.prog.Func.Assign(base, set, over)
	if err == nil {
		err = o.prog.Check(h)
	}
	if err == nil && !o.prog.Func.SameNoise(base, h) {
		err = errors.New("the noise filter is one for all tensors: its hypers cannot differ per tensor")
	}
	return h, err
}

// observeHypers are the hypers the observation's arguments read.
func observeHypers(fn *ir.Func) map[string]bool {
	out := map[string]bool{}
	for _, v := range fn.ObsArgs.Values {
		if v.Op == ir.OpHyper {
			out[v.Name] = true
		}
	}
	return out
}

// tensorSettings computes every tensor's hypers from new base hypers and
// set names, before the optimizer takes them: nil for a tensor without
// overrides. Tensors with the same overrides (a parameter group's, each
// parameter a tensor) share one computation.
func (o *Optimizer) tensorSettings(base []float64, set map[string]bool) ([][]float64, error) {
	out := make([][]float64, len(o.tensors))
	var firsts []int // the first tensor of each distinct overrides
	for i, t := range o.tensors {
		if t.overrides == nil {
			continue
		}
		if j := slices.IndexFunc(firsts, func(f int) bool { return maps.Equal(o.tensors[f].overrides, t.overrides) }); j >= 0 {
			out[i] = out[firsts[j]]
			continue
		}
		h, err := o.tensorHypers(base, set, t.overrides)
		if err != nil {
			return nil, fmt.Errorf("runtime: tensor %s: %w", t.Name, err)
		}
		out[i], firsts = h, append(firsts, i)
	}
	return out, nil
}

// takeHypers makes h, set and the tensors' hypers ts the optimizer's.
func (o *Optimizer) takeHypers(h []float64, set map[string]bool, ts [][]float64) {
	o.hypers, o.set = h, set
	for i, t := range o.tensors {
		t.hypers = ts[i]
	}
}

// segment is a range [Lo, Hi) of the flat buffers that steps with one
// setting's host scalars (Host, the interpreter's) and the kernels' scalar
// arguments (Scalars: the host scalars, then σ_w).
type segment = backend.Segment

// segments splits [0, n) by the hypers of the tensors ts and the noise's
// ranges, adjacent coordinates of one setting merged, each with its step's
// scalars; one segment without overrides and one noise variance.
func (o *Optimizer) segments(n int, noise []noiseRange, ts []*Tensor) []segment {
	scalars := map[string]segment{}
	at := func(h []float64, sigmaW2 float64) segment {
		key := fmt.Sprint(h, sigmaW2)
		s, ok := scalars[key]
		if !ok {
			host := o.prog.HostScalars(h, o.t, sigmaW2)
			s = segment{Host: host, Scalars: o.prog.KernelScalars(host, sigmaW2)}
			scalars[key] = s
		}
		return s
	}
	first := at(o.hypers, noise[0].sigmaW2)
	first.Hi = n
	out := []segment{first}
	for _, r := range noise[1:] {
		out = splitSegment(out, r.lo, r.hi, at(o.hypers, r.sigmaW2))
	}
	for _, t := range ts {
		for _, r := range noise {
			if lo, hi := max(t.Offset, r.lo), min(t.Offset+t.Len, r.hi); t.hypers != nil && lo < hi {
				out = splitSegment(out, lo, hi, at(t.hypers, r.sigmaW2))
			}
		}
	}
	return out
}

// splitSegment gives [lo, hi) the scalars of s in segs, which cover [0, n)
// in order, and merges neighbours of the same scalars.
func splitSegment(segs []segment, lo, hi int, s segment) []segment {
	var out []segment
	for _, g := range segs {
		if g.Hi <= lo || g.Lo >= hi {
			out = appendSegment(out, g)
			continue
		}
		if g.Lo < lo {
			out = appendSegment(out, segment{Lo: g.Lo, Hi: lo, Host: g.Host, Scalars: g.Scalars})
		}
		out = appendSegment(out, segment{Lo: max(g.Lo, lo), Hi: min(g.Hi, hi), Host: s.Host, Scalars: s.Scalars})
		if g.Hi > hi {
			out = appendSegment(out, segment{Lo: hi, Hi: g.Hi, Host: g.Host, Scalars: g.Scalars})
		}
	}
	return out
}

func appendSegment(segs []segment, s segment) []segment {
	if k := len(segs) - 1; k >= 0 && segs[k].Hi == s.Lo && slices.Equal(segs[k].Scalars, s.Scalars) {
		segs[k].Hi = s.Hi
		return segs
	}
	return append(segs, s)
}
