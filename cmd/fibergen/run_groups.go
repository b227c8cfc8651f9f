package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/runtime"
)

// group is one --group LO:HI:name=value[,name=value...]: the coordinates
// [lo, hi) of theta step with these hypers (runtime.Tensor.SetHypers).
type group struct {
	lo, hi int
	hypers map[string]float64
	text   string
}

// groupsFlag collects the repeated --group.
type groupsFlag []group

func (l *groupsFlag) repeatable() {}
func (l *groupsFlag) String() string {
	var parts []string
	for _, g := range *l {
		parts = append(parts, g.text)
	}
	return strings.Join(parts, " ")
}

func (l *groupsFlag) Set(s string) error {
	lo, rest, ok1 := strings.Cut(s, ":")
	hi, sets, ok2 := strings.Cut(rest, ":")
	g := group{hypers: map[string]float64{}, text: s}
	var err1, err2 error
	g.lo, err1 = strconv.Atoi(lo)
	g.hi, err2 = strconv.Atoi(hi)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || g.lo < 0 || g.hi <= g.lo || sets == "" {
		return errors.New("want LO:HI:name=value[,name=value...] with 0 <= LO < HI")
	}
	for _, set := range strings.Split(sets, ",") {
		name, x, err := lang.ParseSetting(set)
		if err != nil {
			return err
		}
		if _, dup := g.hypers[name]; dup {
			return fmt.Errorf("%s is set twice", name)
		}
		g.hypers[name] = x
	}
	for _, prev := range *l {
		if g.lo < prev.hi && prev.lo < g.hi {
			return fmt.Errorf("overlaps --group %q", prev.text)
		}
	}
	*l = append(*l, g)
	return nil
}

// sizesFlag is --tensors N[,N...]: theta's tensors, by their sizes in
// order, each registered as its own (per-tensor reductions: lamb's trust
// ratio is each tensor's).
type sizesFlag [][]int // each tensor's shape; one dimension: its size

func (l *sizesFlag) String() string {
	parts := make([]string, len(*l))
	for i, dims := range *l {
		ds := make([]string, len(dims))
		for k, d := range dims {
			ds[k] = strconv.Itoa(d)
		}
		parts[i] = strings.Join(ds, "x")
	}
	return strings.Join(parts, ",")
}

func (l *sizesFlag) Set(s string) error {
	var shapes [][]int
	for _, f := range strings.Split(s, ",") {
		var dims []int
		for _, d := range strings.Split(f, "x") {
			n, err := strconv.Atoi(d)
			if err != nil || n <= 0 {
				return errors.New("want sizes or shapes N[,RxC...], each dimension a whole number > 0")
			}
			if n > maxTensor/size(dims) {
				return fmt.Errorf("%s: a tensor of more than 2^40 coordinates", f)
			}
			dims = append(dims, n)
		}
		shapes = append(shapes, dims)
	}
	*l = shapes
	return nil
}

// maxTensor bounds a tensor's size, far above any buffer's, so that no
// product of dimensions wraps.
const maxTensor = 1 << 40

// size is the number of coordinates of a tensor of shape dims.
func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// tensors are theta's tensors, registered in order: --tensors' sizes, or
// one split where a group starts or ends; the flat vector of a run.
type tensors []*runtime.Tensor

// register registers theta as tensors, split at the ends of --tensors'
// sizes and of the groups, and gives each group's tensors its hypers. A
// group past the end of theta, sizes that do not sum to theta's, or a group
// that cuts one of the sizes' tensors is an error.
func (o *runOptions) register(opt *runtime.Optimizer, theta []float32) (tensors, error) {
	cuts, err := o.cuts(len(theta))
	if err != nil {
		return nil, err
	}
	var ts tensors
	for i := 1; i < len(cuts); i++ {
		name := "theta"
		if len(cuts) > 2 {
			name = fmt.Sprintf("theta[%d:%d]", cuts[i-1], cuts[i])
		}
		shape := []int{cuts[i] - cuts[i-1]}
		if len(o.tensorSizes) > 0 { // the cuts are theirs: a group holds whole tensors
			shape = o.tensorSizes[i-1]
		}
		t, err := opt.RegisterShaped(name, theta[cuts[i-1]:cuts[i]], shape...)
		if err != nil {
			return nil, err
		}
		if g := o.groups.at(cuts[i-1]); g != nil {
			if err := t.SetHypers(g.hypers); err != nil {
				return nil, fmt.Errorf("--group %s: %w", g.text, cause(err))
			}
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// cuts are where theta's n coordinates split into tensors, 0 and n
// included, sorted.
func (o *runOptions) cuts(n int) ([]int, error) {
	cuts, sized := []int{0}, len(o.tensorSizes) > 0
	for _, dims := range o.tensorSizes {
		cuts = append(cuts, cuts[len(cuts)-1]+size(dims))
	}
	if end := cuts[len(cuts)-1]; sized && end != n {
		return nil, fmt.Errorf("--tensors %s: the sizes sum to %d, theta has %d coordinates", o.tensorSizes.String(), end, n)
	}
	for _, g := range o.groups {
		switch {
		case g.hi > n:
			return nil, fmt.Errorf("--group %s: theta has %d coordinates", g.text, n)
		case !sized:
			cuts = append(cuts, g.lo, g.hi)
		case !slices.Contains(cuts, g.lo) || !slices.Contains(cuts, g.hi):
			return nil, fmt.Errorf("--group %s: cuts a tensor of --tensors %s (a group holds whole tensors)", g.text, o.tensorSizes.String())
		}
	}
	if err := o.clipCuts(&cuts, n, sized); err != nil {
		return nil, err
	}
	cuts = append(cuts, n)
	slices.Sort(cuts)
	return slices.Compact(cuts), nil
}

// clipCuts adds the ends of --clip-groups to cuts (with --tensors, each
// must be one: a group holds whole tensors); they must sum to n.
func (o *runOptions) clipCuts(cuts *[]int, n int, sized bool) error {
	groups := o.ex.clipGroups
	ends := groups.cuts()
	if len(ends) > 0 && ends[len(ends)-1] != n {
		return fmt.Errorf("--clip-groups %s: the sizes sum to %d, theta has %d coordinates", groups.String(), ends[len(ends)-1], n)
	}
	for _, c := range ends {
		switch {
		case !sized:
			*cuts = append(*cuts, c)
		case !slices.Contains(*cuts, c):
			return fmt.Errorf("--clip-groups %s: cuts a tensor of --tensors %s (a group holds whole tensors)", groups.String(), o.tensorSizes.String())
		}
	}
	return nil
}

// at is the group that holds coordinate i, or nil.
func (gs groupsFlag) at(i int) *group {
	for k := range gs {
		if gs[k].lo <= i && i < gs[k].hi {
			return &gs[k]
		}
	}
	return nil
}

// SetGrad sets each tensor's part of the flat gradient g.
func (ts tensors) SetGrad(g []float32) error {
	var errs []error
	for _, t := range ts {
		errs = append(errs, t.SetGrad(g[t.Offset:t.Offset+t.Len]))
	}
	return errors.Join(errs...)
}

// Params, Lookahead and Grad concatenate the tensors' values.
func (ts tensors) Params() ([]float32, error) { return ts.concat((*runtime.Tensor).Params) }

func (ts tensors) Lookahead() ([]float32, error) { return ts.concat((*runtime.Tensor).Lookahead) }

func (ts tensors) Grad() ([]float32, error) { return ts.concat((*runtime.Tensor).Grad) }

func (ts tensors) concat(get func(*runtime.Tensor) ([]float32, error)) ([]float32, error) {
	var out []float32
	for _, t := range ts {
		v, err := get(t)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}
