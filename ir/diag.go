package ir

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Diagnostic is a per-step statistic the runtime computes after a step when
// asked to (the DSL's diagnostic declaration). Its block runs per coordinate after the
// step, apart from it: a load in it reads a state's value *after* the step,
// its host scalars are host scalars of the step (ScalarIndexes), and it
// stores the terms of the sums the statistic is a ratio of (DiagTerms).
type Diagnostic struct {
	Kind  string   // "clamp_mass"
	Args  []string // the step's names it measures, as declared: mhat, vbar
	Block *Block   // named Kind; stores num and den
}

// DiagTerms are what a diagnostic block stores for each coordinate: the
// terms of the numerator and of the denominator. clamp_mass is
// Σ num / Σ den, 0 when Σ den is 0.
var DiagTerms = []string{"num", "den"}

// Reads lists the states the diagnostic loads, in the order of f.States.
func (d *Diagnostic) Reads(f *Func) []string {
	var out []string
	for _, s := range f.States {
		if slices.ContainsFunc(d.Block.Values, func(v *Value) bool { return v.Op == OpLoad && v.Name == s }) {
			out = append(out, s)
		}
	}
	return out
}

// Diagnostic returns the declared diagnostic of the given kind, or nil.
func (f *Func) Diagnostic(kind string) *Diagnostic {
	for _, d := range f.Diags {
		if d.Kind == kind {
			return d
		}
	}
	return nil
}

// loadable reports whether block b may load the named buffer: the step g,
// theta and the states; a diagnostic the states (after the step).
func (f *Func) loadable(b *Block, name string) bool {
	switch b.Kind {
	case StepBlock:
		return name == GradName || name == ThetaName || slices.Contains(f.States, name) || f.LineState(name) != nil
	case ReduceBlock: // not yet a line state: the reduction pass has no line values
		return name == GradName || name == ThetaName || slices.Contains(f.States, name)
	case DiagBlock:
		return slices.Contains(f.States, name)
	}
	return false
}

// ScalarIndexes returns, for each host scalar of the diagnostic's block
// (HostScalars order), the index of the step's host scalar that computes
// the same value: a diagnostic kernel takes the step kernel's scalars.
func (d *Diagnostic) ScalarIndexes(f *Func) ([]int, error) {
	k := &structures{ids: map[*Value]int{}, keys: map[string]int{}}
	step := map[int]int{}
	for i, v := range HostScalars(f.Step) {
		if _, ok := step[k.of(v)]; !ok {
			step[k.of(v)] = i
		}
	}
	var out []int
	for _, v := range HostScalars(d.Block) {
		i, ok := step[k.of(v)]
		if !ok {
			return nil, fmt.Errorf("diagnostic %s reads %s, which is not a host scalar of the step", d.Kind, ExprString(v))
		}
		out = append(out, i)
	}
	return out, nil
}

// structures numbers computations: values of any blocks get the same
// number when they compute the same value the same way.
type structures struct {
	ids  map[*Value]int
	keys map[string]int
}

func (s *structures) of(v *Value) int {
	if id, ok := s.ids[v]; ok {
		return id
	}
	args := make([]int, len(v.Args))
	for i, a := range v.Args {
		args[i] = s.of(a)
	}
	if v.Op.IsCommutative() {
		slices.Sort(args)
	}
	key := fmt.Sprintf("%s %s %s %x %v", v.Op, v.Type, v.Name, math.Float64bits(v.Const), args)
	id, ok := s.keys[key]
	if !ok {
		id = len(s.keys)
		s.keys[key] = id
	}
	s.ids[v] = id
	return id
}

// verifyDiagnostics checks that each diagnostic is of a known kind, declared
// once, and reads only host scalars the step kernel has.
func (f *Func) verifyDiagnostics() error {
	seen := map[string]bool{}
	for _, d := range f.Diags {
		switch {
		case d.Kind != "clamp_mass" || len(d.Args) != 2:
			return fmt.Errorf("ir: %s: unknown diagnostic %s(%s)", f.Name, d.Kind, strings.Join(d.Args, ", "))
		case seen[d.Kind]:
			return fmt.Errorf("ir: %s: diagnostic %s declared twice", f.Name, d.Kind)
		}
		seen[d.Kind] = true
		if _, err := d.ScalarIndexes(f); err != nil {
			return fmt.Errorf("ir: %s: %w", f.Name, err)
		}
	}
	return nil
}

// Floor returns the floor of a clamp_mass diagnostic: the value its block
// compares vbar with, or nil for a block without one.
func (d *Diagnostic) Floor() *Value {
	for _, v := range d.Block.Values {
		if v.Op == OpEq {
			return v.Args[1]
		}
	}
	return nil
}

// FixedFloor reports whether a clamp_mass diagnostic's floor is fixed:
// per-step uniform and computed without sigma_w2 (eps_v), rather than
// scaled by the noise (kappa_v·A·sigma_w2) or per coordinate (rho·vhat). On
// a fixed floor a large clamp_mass means two step sizes at once, the
// floored coordinates stepping ~1/sqrt(floor) per unit of mhat (the
// runtime's clamp warning); on the other floors it is by design.
func (d *Diagnostic) FixedFloor() bool {
	floor := d.Floor()
	return floor != nil && floor.Uniform && !readsOp(floor, OpSigmaW2, map[*Value]bool{})
}

// readsOp reports whether v or a value it reads is an op value; seen holds
// the values visited.
func readsOp(v *Value, op Op, seen map[*Value]bool) bool {
	return reads(v, func(v *Value) bool { return v.Op == op }, seen)
}

// reads reports whether v or a value it reads is one of which.
func reads(v *Value, which func(*Value) bool, seen map[*Value]bool) bool {
	if which(v) {
		return true
	}
	if seen[v] {
		return false
	}
	seen[v] = true
	return slices.ContainsFunc(v.Args, func(a *Value) bool { return reads(a, which, seen) })
}
