// Package hostisa lists the instruction-set variants of the host kernel's
// entry points: the code generator emits every host function once per
// variant (package llvmgen), the toolchain compiles each variant with its
// LLVM target features, and the runtime (package hostkernel) runs the
// widest one whose features this CPU reports through CPUID (Choose). Each
// variant's feature list is one fact, read by both: the compiler enables
// exactly those features and the check requires exactly those. Every
// variant performs the same IEEE operations, so all compute the same bits.
package hostisa

import (
	"fmt"
	"strings"
)

// Variant is one instruction-set variant of the host functions.
type Variant struct {
	Name   string // "generic", "avx2", "avx512": the values of FIBERGEN_HOST_ISA
	Suffix string // appended to the generic symbol: "", "_avx2", "_avx512"
	// Features are the LLVM target features the variant is compiled with,
	// closed under LLVM's implications (avx512f implies fma and f16c), so
	// that they are also everything a CPU must report to run it; nil for
	// the triple's baseline (x86-64: SSE2, which every amd64 CPU has).
	Features []string
	// Tune is LLVM's tune-cpu, the scheduling model: it orders
	// instructions and never enables one ("" for the default).
	Tune       string
	VectorBits int // the width of its SIMD registers
}

// Features of the x86-64 variants: what their kernels need, no more (a
// feature left out changes no instruction of any shipped kernel,
// docs/decisions.md 87).
var (
	avx2Features   = []string{"sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2"}
	avx512Features = append(append([]string(nil), avx2Features...), "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl")
)

// Generic is the variant every CPU of the architecture runs.
var Generic = Variant{Name: "generic", VectorBits: 128}

// amd64 lists the variants for x86-64, from the baseline to the widest.
// Their tuning is that of LLVM 14's x86-64-v3 and x86-64-v4.
var amd64 = Recipe{
	Generic,
	{Name: "avx2", Suffix: "_avx2", Features: avx2Features, Tune: "haswell", VectorBits: 256},
	{Name: "avx512", Suffix: "_avx512", Features: avx512Features, Tune: "skylake-avx512", VectorBits: 512},
}

// TargetFeatures is v's features as LLVM's "target-features" attribute
// and llc's -mattr take them: "+sse3,+ssse3,...", "" for none.
func (v Variant) TargetFeatures() string {
	plus := make([]string, len(v.Features))
	for i, f := range v.Features {
		plus[i] = "+" + f
	}
	return strings.Join(plus, ",")
}

// String is v as a build's recipe spells it: its name, features, tuning
// and vector width.
func (v Variant) String() string {
	return fmt.Sprintf("%s{features=%s tune=%s vector_bits=%d}", v.Name, v.TargetFeatures(), v.Tune, v.VectorBits)
}

// Recipe is the variants a build compiles, the baseline first. Its String
// is deterministic: a cache key of the host kernel may read it.
type Recipe []Variant

// String lists the recipe's variants, one after the other.
func (r Recipe) String() string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = v.String()
	}
	return strings.Join(parts, " ")
}

// All is every variant the code generator emits, the baseline first; the
// toolchain compiles those of the target architecture (For).
func All() Recipe { return amd64 }

// For returns the variants compiled for goarch, the baseline first: all of
// them on amd64, only Generic elsewhere.
func For(goarch string) Recipe {
	if goarch == "amd64" {
		return amd64
	}
	return Recipe{Generic}
}

// Of returns the variant whose symbols end like symbol's (Generic if none).
func Of(symbol string) Variant {
	for _, v := range amd64[1:] {
		if strings.HasSuffix(symbol, v.Suffix) {
			return v
		}
	}
	return Generic
}

// ByName returns the variant called name.
func ByName(name string) (Variant, bool) {
	return amd64.ByName(name)
}

// ByName returns r's variant called name.
func (r Recipe) ByName(name string) (Variant, bool) {
	for _, v := range r {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Names lists the variants' names for a message: "generic, avx2 or
// avx512".
func Names() string { return amd64.names() }

func (r Recipe) names() string {
	var names []string
	for _, v := range r {
		names = append(names, v.Name)
	}
	return orList(names)
}

// orList writes "a, b or c"; "a" alone.
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
