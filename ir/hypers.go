package ir

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultHypers returns the hypers' default values in declaration order.
func (f *Func) DefaultHypers() []float64 {
	h := make([]float64, len(f.Hypers))
	for i, x := range f.Hypers {
		h[i] = x.Default
	}
	return h
}

// SetHyper overrides one hyper in h, checking the name and the range.
func (f *Func) SetHyper(h []float64, name string, value float64) error {
	i := f.HyperIndex(name)
	if i < 0 {
		return fmt.Errorf("%s has no hyper %s (its hypers: %s)", f.Name, name, strings.Join(f.HyperNames(), ", "))
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

// ParseSetting splits a "name=value" override.
func ParseSetting(s string) (name string, value float64, err error) {
	name, text, ok := strings.Cut(s, "=")
	name, text = strings.TrimSpace(name), strings.TrimSpace(text)
	if !ok || name == "" || text == "" {
		return "", 0, fmt.Errorf("malformed setting %q: want name=value", s)
	}
	value, err = strconv.ParseFloat(text, 64)
	if errors.Is(err, strconv.ErrRange) {
		return "", 0, fmt.Errorf("setting %q: %s is out of the float64 range", s, text)
	}
	if err != nil {
		return "", 0, fmt.Errorf("malformed setting %q: %s is not a number", s, text)
	}
	return name, value, nil
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
func (f *Func) ApplySettings(settings []string) ([]float64, error) {
	return f.Override(f.DefaultHypers(), settings)
}

// Override returns hypers h overridden by "name=value" settings, each in
// its range; the filters must be stable at the result (CheckStability). h
// is not changed.
func (f *Func) Override(h []float64, settings []string) ([]float64, error) {
	h = slices.Clone(h)
	for _, s := range settings {
		name, value, err := ParseSetting(s)
		if err == nil {
			err = f.SetHyper(h, name, value)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := f.CheckStability(h); err != nil {
		return nil, err
	}
	return h, nil
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
