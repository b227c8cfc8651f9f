package ir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// This file is the storage of the buffers (docs/dsl.md, "Storage types"): every value is
// float32 while the step computes; a state declared `state m: bf16 = 0` keeps its values in
// memory as bfloat16, and every store narrows to it — to nearest, ties to even, or
// stochastically with bits of its own Philox counters (rng.RoundingBits) — so loads widen
// exactly. The step reads what it computed in float32, not the narrowed value (decision 129).

// Storage is how a buffer keeps its values: its type and, narrower than
// float32, whether stores round stochastically rather than to nearest.
type Storage struct {
	DType      lang.DType `json:"dtype"`
	Stochastic bool       `json:"stochastic,omitempty"`
}

// Defaulted is s, or float32 for the zero Storage.
func (s Storage) Defaulted() Storage {
	if s.DType == "" {
		s.DType = lang.Float32
	}
	return s
}

// Narrow reports whether stores round: the storage is narrower than float32.
func (s Storage) Narrow() bool { return s.DType.Narrow() }

// String is the storage as a declaration writes it after the colon: "bf16",
// "bf16 stochastic".
func (s Storage) String() string {
	if s.Stochastic {
		return string(s.DType) + " stochastic"
	}
	return string(s.DType)
}

// StorageOf is the storage of the buffer named name: Float32 but for a state
// with a narrower declaration, or theta compiled for narrower parameters
// (SetParamStorage).
func (f *Func) StorageOf(name string) Storage {
	if s, ok := f.Storage[name]; ok {
		return s
	}
	return Storage{DType: lang.Float32}
}

// stored lists the buffers a step stores, in ABI order: theta, then the
// states.
func (f *Func) stored() []string { return append([]string{ThetaName}, f.States...) }

// NarrowBuffers lists the buffers stored narrower than float32, in ABI
// order: theta, if so compiled, then the states.
func (f *Func) NarrowBuffers() []string {
	return slices.DeleteFunc(f.stored(), func(s string) bool { return !f.StorageOf(s).Narrow() })
}

// SetParamStorage compiles f for parameters stored as s: theta's loads
// widen and its stores narrow as a narrow state's do. The gradient stays
// float32 (decision 130), and float32 parameters (the zero Storage too)
// need nothing.
func (f *Func) SetParamStorage(s Storage) error {
	s = s.Defaulted()
	if err := s.check(ThetaName); err != nil {
		return err
	}
	if !s.Narrow() {
		delete(f.Storage, ThetaName)
		return nil
	}
	if f.Storage == nil {
		f.Storage = map[string]Storage{}
	}
	f.Storage[ThetaName] = s
	return nil
}

// ParseStorage reads a storage as String writes it: "bf16", "f16
// stochastic", "f32".
func ParseStorage(text string) (Storage, error) {
	words := strings.Fields(text)
	if len(words) == 0 || len(words) > 2 || len(words) == 2 && words[1] != lang.Stochastic {
		return Storage{}, fmt.Errorf("storage %q: want a type (%s), then %q or nothing", text, lang.DTypeList("or"), lang.Stochastic)
	}
	s := Storage{DType: lang.DType(words[0]), Stochastic: len(words) == 2}
	return s, s.check("the parameters")
}

// check reports a type fibergen does not store, or stochastic rounding of a
// float32 buffer, which rounds nothing.
func (s Storage) check(what string) error {
	switch {
	case !slices.Contains(lang.DTypes, s.DType):
		return fmt.Errorf("%s: unknown storage type %q (want %s)", what, s.DType, lang.DTypeList("or"))
	case s.Stochastic && !s.Narrow():
		return fmt.Errorf("%s: stochastic rounding of float32, which rounds nothing", what)
	}
	return nil
}

// dumpStorage is the dump's line of the narrow buffers: "storage m:bf16 v:bf16 stochastic".
func dumpStorage(f *Func) string {
	var parts []string
	for _, s := range f.NarrowBuffers() {
		parts = append(parts, s+":"+f.StorageOf(s).String())
	}
	if len(parts) == 0 {
		return ""
	}
	return "storage " + strings.Join(parts, ", ") + "\n"
}

// verifyStorage checks that only theta and the states have a storage, of
// a known type, and that only a narrow one rounds stochastically.
func verifyStorage(f *Func) error {
	for name, s := range f.Storage {
		if !slices.Contains(f.stored(), name) {
			return fmt.Errorf("storage of %s, which is neither theta nor a state", name)
		}
		if err := s.check(name); err != nil {
			return err
		}
	}
	return nil
}

// Stochastic reports whether a store of the step rounds stochastically:
// the step then draws rounding bits from its seed and step counter.
func (f *Func) Stochastic() bool {
	return slices.ContainsFunc(f.stored(), func(s string) bool { return f.StorageOf(s).Stochastic })
}
