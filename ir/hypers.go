package ir

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// DefaultHypers returns the hypers' default values in declaration order.
func (f *Func) DefaultHypers() []float64 {
	h := make([]float64, len(f.Hypers))
	for i, x := range f.Hypers {
		h[i] = x.Default
	}
	return h
}

// DerivedHypers names the hypers whose default reads earlier hypers.
func (f *Func) DerivedHypers() []string {
	var out []string
	for _, h := range f.Hypers {
		if h.Derived {
			out = append(out, h.Name)
		}
	}
	return out
}

// Derive returns h with every derived hyper that set does not name
// recomputed from the hypers before it, in declaration order: a derived
// default follows the hypers it reads until it is set itself.
func (f *Func) Derive(h []float64, set map[string]bool) []float64 {
	h = slices.Clone(h)
	if f.HyperDefaults == nil {
		return h
	}
	for _, s := range f.HyperDefaults.Stores() {
		if !set[s.Name] {
			h[f.HyperIndex(s.Name)] = f.EvalUniform(s.Args[0], h, math.NaN())
		}
	}
	return h
}

// NoHyper is the error for a hyper name f does not declare; where name is
// a hyper's alias, which only a binding takes, it says which hyper's.
func (f *Func) NoHyper(name string) error {
	var of []string // the hypers name is an alias of, in index order
	for _, h := range f.Hypers {
		if h.Alias != nil && h.Alias.Name == name {
			of = append(of, h.Name)
		}
	}
	if len(of) > 0 {
		return fmt.Errorf("%s has no hyper %s: %s is the alias a binding takes (PyTorch's name) for %s; set %s here",
			f.Name, name, name, strings.Join(of, ", "), strings.Join(of, ", "))
	}
	return fmt.Errorf("%s has no hyper %s (its hypers: %s)", f.Name, name, strings.Join(f.HyperNames(), ", "))
}

// SetHyper overrides one hyper in h, checking the name and the range.
func (f *Func) SetHyper(h []float64, name string, value float64) error {
	i := f.HyperIndex(name)
	if i < 0 {
		return f.NoHyper(name)
	}
	if err := f.Hypers[i].Check(value); err != nil {
		return err
	}
	h[i] = value
	return nil
}

// Check reports whether value is allowed for the hyper.
func (h Hyper) Check(value float64) error {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("hyper %s = %v: value must be finite", h.Name, value)
	}
	if !h.Range.Contains(value) {
		return fmt.Errorf("hyper %s = %v is outside its range %s", h.Name, value, h.Range)
	}
	return nil
}

// HyperNames lists the hypers in declaration order.
func (f *Func) HyperNames() []string {
	names := make([]string, len(f.Hypers))
	for i, h := range f.Hypers {
		names[i] = h.Name
	}
	return names
}

// CheckHypers reports hypers h (one value per hyper) that are out of range
// or make a filter unstable.
func (f *Func) CheckHypers(h []float64) error {
	if len(h) != len(f.Hypers) {
		return fmt.Errorf("%s: %d hypers, want %d", f.Name, len(h), len(f.Hypers))
	}
	for i, hy := range f.Hypers {
		if err := hy.Check(h[i]); err != nil {
			return err
		}
	}
	return f.CheckStability(h)
}

// ApplySettings returns the defaults overridden by "name=value" settings,
// each in its range; the filters must be stable at the result
// (CheckStability).
// A derived hyper that the settings do not name follows the hypers it
// reads (Derive).
func (f *Func) ApplySettings(settings []string) ([]float64, error) {
	h, _, err := f.Settle(f.DefaultHypers(), settings, nil)
	return h, err
}

// Settle returns hypers h overridden by "name=value" settings, each in its
// range (in order: the last of a name wins), as Assign does; the result
// must pass CheckHypers. h and set are not changed.
func (f *Func) Settle(h []float64, settings []string, set map[string]bool) ([]float64, map[string]bool, error) {
	values := map[string]float64{}
	for _, s := range settings {
		name, value, err := lang.ParseSetting(s)
		if err == nil {
			err = f.SetHyper(slices.Clone(h), name, value) // the name and the range
		}
		if err != nil {
			return nil, nil, err
		}
		values[name] = value
	}
	h, named, err := f.Assign(h, set, values)
	if err == nil {
		err = f.CheckHypers(h)
	}
	if err != nil {
		return nil, nil, err
	}
	return h, named, nil
}

// Assign returns hypers h with values, and set with their names, the
// derived hypers that neither names recomputed (Derive); an unknown name is
// an error (NoHyper). Nothing is checked otherwise; h and set are not
// changed.
func (f *Func) Assign(h []float64, set map[string]bool, values map[string]float64) ([]float64, map[string]bool, error) {
	h, named := slices.Clone(h), maps.Clone(set)
	if named == nil {
		named = map[string]bool{}
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		i := f.HyperIndex(name)
		if i < 0 {
			return nil, nil, f.NoHyper(name)
		}
		h[i], named[name] = values[name], true
	}
	return f.Derive(h, named), named, nil
}

// Setting prints hypers h (one value per hyper) as "name=value, …".
func (f *Func) Setting(h []float64) string {
	parts := make([]string, len(f.Hypers))
	for i, hy := range f.Hypers {
		parts[i] = fmt.Sprintf("%s=%v", hy.Name, h[i])
	}
	if len(parts) == 0 {
		return "(no hypers)"
	}
	return strings.Join(parts, ", ")
}
