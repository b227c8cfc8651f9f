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

// Narrow reports whether stores round: the storage is narrower than float32.
func (s Storage) Narrow() bool { return s.DType != "" && s.DType != lang.Float32 }

// String is the storage as a declaration writes it after the colon: "bf16",
// "bf16 stochastic".
func (s Storage) String() string {
	if s.Stochastic {
		return string(s.DType) + " stochastic"
	}
	return string(s.DType)
}

// StorageOf is the storage of the buffer named name: Float32 but for a state
// with a narrower declaration.
func (f *Func) StorageOf(name string) Storage {
	if s, ok := f.Storage[name]; ok {
		return s
	}
	return Storage{DType: lang.Float32}
}

// NarrowStates lists the states stored narrower than float32, in order.
func (f *Func) NarrowStates() []string {
	return slices.DeleteFunc(slices.Clone(f.States), func(s string) bool { return !f.StorageOf(s).Narrow() })
}

// dumpStorage is the dump's line of the narrow states: "storage m:bf16 v:bf16 stochastic".
func dumpStorage(f *Func) string {
	var parts []string
	for _, s := range f.NarrowStates() {
		parts = append(parts, s+":"+f.StorageOf(s).String())
	}
	if len(parts) == 0 {
		return ""
	}
	return "storage " + strings.Join(parts, ", ") + "\n"
}

// verifyStorage checks that only states have a storage, of a known type,
// and that only a narrow one rounds stochastically.
func verifyStorage(f *Func) error {
	for name, s := range f.Storage {
		switch {
		case !slices.Contains(f.States, name):
			return fmt.Errorf("storage of %s, which is not a state", name)
		case !slices.Contains(lang.DTypes, s.DType):
			return fmt.Errorf("state %s: unknown storage type %q", name, s.DType)
		case s.Stochastic && !s.Narrow():
			return fmt.Errorf("state %s: stochastic rounding of a float32 state", name)
		}
	}
	return nil
}

// Stochastic reports whether a store of the step rounds stochastically:
// the step then draws rounding bits from its seed and step counter.
func (f *Func) Stochastic() bool {
	return slices.ContainsFunc(f.States, func(s string) bool { return f.StorageOf(s).Stochastic })
}
