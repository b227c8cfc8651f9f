// Package hostisa lists the instruction-set variants of the host kernel's
// entry points: the code generator emits every host function once per
// variant (package llvmgen), the toolchain compiles each variant for its
// CPU, and the runtime (package hostkernel) runs the best one the CPU
// supports. Every variant performs the same IEEE operations, so all compute
// the same bits.
package hostisa

import "strings"

// Variant is one instruction-set variant of the host functions.
type Variant struct {
	Name       string   // "generic", "avx2", "avx512": the values of FIBERGEN_HOST_ISA
	Suffix     string   // appended to the generic symbol: "", "_avx2", "_avx512"
	CPU        string   // LLVM's target-cpu for the variant; "" for the triple's baseline
	VectorBits int      // the width of its SIMD registers
	Flags      []string // what /proc/cpuinfo's flags must list for a CPU to run it
}

// x86-64 microarchitecture levels v3 and v4, as LLVM defines them.
var (
	v3Flags = []string{"avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "movbe", "abm"}
	v4Flags = append(append([]string(nil), v3Flags...), "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
)

// Generic is the variant every CPU of the architecture runs.
var Generic = Variant{Name: "generic", VectorBits: 128}

// amd64 lists the variants for x86-64, from the baseline to the widest.
var amd64 = []Variant{
	Generic,
	{Name: "avx2", Suffix: "_avx2", CPU: "x86-64-v3", VectorBits: 256, Flags: v3Flags},
	{Name: "avx512", Suffix: "_avx512", CPU: "x86-64-v4", VectorBits: 512, Flags: v4Flags},
}

// All is every variant the code generator emits, the baseline first; the
// toolchain compiles those of the target architecture (For).
func All() []Variant { return amd64 }

// For returns the variants compiled for goarch, the baseline first: all of
// them on amd64, only Generic elsewhere.
func For(goarch string) []Variant {
	if goarch == "amd64" {
		return amd64
	}
	return []Variant{Generic}
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
	for _, v := range amd64 {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Names lists the variants' names for a message: "generic, avx2 or
// avx512".
func Names() string {
	var names []string
	for _, v := range amd64 {
		names = append(names, v.Name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Supported reports whether the flags lines of cpuinfo (/proc/cpuinfo's
// text) list everything v needs.
func (v Variant) Supported(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		flags := map[string]bool{}
		for _, f := range strings.Fields(line) {
			flags[f] = true
		}
		for _, need := range v.Flags {
			if !flags[need] {
				return false
			}
		}
		return true
	}
	return len(v.Flags) == 0
}
