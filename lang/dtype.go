package lang

import "strings"

// DType is a storage type of a buffer, named as the DSL writes it
// (`state m: bf16 = 0`; docs/dsl.md, "Storage types").
type DType string

// The storage types. Float32 is every buffer's without a declaration.
const (
	Float32  DType = "f32"
	BFloat16 DType = "bf16"
	Float16  DType = "f16"
)

// DTypes are the storage types fibergen stores.
var DTypes = []DType{Float32, BFloat16, Float16}

// DTypeList names the storage types for a message, the last after conj:
// DTypeList("or") is "f32, bf16 or f16".
func DTypeList(conj string) string {
	names := make([]string, len(DTypes))
	for i, d := range DTypes {
		names[i] = string(d)
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// Stochastic is the word that asks for stochastic rounding after a narrow
// storage type: `state m: bf16 stochastic = 0`.
const Stochastic = "stochastic"

// Narrow reports whether d is a 16-bit type, whose stores round.
func (d DType) Narrow() bool { return d == BFloat16 || d == Float16 }

// Size is the bytes of one stored value.
func (d DType) Size() int {
	if d == BFloat16 || d == Float16 {
		return 2
	}
	return 4
}

// Name is the storage type's name in manifests, NumPy and PyTorch:
// float32, bfloat16, float16.
func (d DType) Name() string {
	switch d {
	case BFloat16:
		return "bfloat16"
	case Float16:
		return "float16"
	}
	return "float32"
}

// DTypeNamed is the storage type whose Name is name ("float32",
// "bfloat16", "float16").
func DTypeNamed(name string) (DType, bool) {
	for _, d := range DTypes {
		if d.Name() == name {
			return d, true
		}
	}
	return "", false
}
