package hostisa

import (
	"maps"
	"slices"
	"sync"
)

// Features is a set of LLVM target feature names: those a CPU has.
type Features map[string]bool

// NewFeatures is the set of names.
func NewFeatures(names ...string) Features {
	f := Features{}
	for _, n := range names {
		f[n] = true
	}
	return f
}

// Sorted lists the names of f in order.
func (f Features) Sorted() []string { return slices.Sorted(maps.Keys(f)) }

// Host is the features of the variants (cpuidBits) that this CPU reports
// through CPUID and whose registers this OS saves; read once per process.
func Host() Features { return maps.Clone(host()) }

var host = sync.OnceValue(func() Features { return hostRegisters().features() })

// registers are the CPUID leaves and the XCR0 that say which features a
// CPU has: zero where the CPU has no such leaf, or no XGETBV.
type registers struct {
	leaf1, leaf7 [4]uint32 // eax, ebx, ecx, edx of CPUID leaves 1 and 7 (subleaf 0)
	xcr0         uint64    // the register state the OS saves (XGETBV 0)
}

// The registers of a CPUID leaf, and the bits read outside the table.
const (
	eax, ebx, ecx, edx = 0, 1, 2, 3
	osxsave            = 1 << 27 // leaf 1 ecx: the OS enabled XGETBV
)

// The state components of XCR0 a feature's registers need the OS to save.
const (
	ymmState = 1<<1 | 1<<2                   // SSE, AVX (the upper halves of the YMM registers)
	zmmState = ymmState | 1<<5 | 1<<6 | 1<<7 // opmask, ZMM_Hi256, Hi16_ZMM
)

// cpuidBit is where CPUID reports a feature (Intel SDM vol. 2A, CPUID),
// and the register state it needs.
type cpuidBit struct {
	leaf7 bool   // leaf 7, else leaf 1
	reg   int    // eax..edx
	bit   uint   // the bit in reg
	state uint64 // the XCR0 bits it needs (0 for the SSE registers, which every amd64 OS saves)
}

// cpuidBits locates every feature a variant of this package names.
var cpuidBits = map[string]cpuidBit{
	"sse3":     {false, ecx, 0, 0},
	"ssse3":    {false, ecx, 9, 0},
	"sse4.1":   {false, ecx, 19, 0},
	"sse4.2":   {false, ecx, 20, 0},
	"fma":      {false, ecx, 12, ymmState},
	"avx":      {false, ecx, 28, ymmState},
	"f16c":     {false, ecx, 29, ymmState},
	"avx2":     {true, ebx, 5, ymmState},
	"avx512f":  {true, ebx, 16, zmmState},
	"avx512dq": {true, ebx, 17, zmmState},
	"avx512bw": {true, ebx, 30, zmmState},
	"avx512vl": {true, ebx, 31, zmmState},
}

// features decodes r: the features of cpuidBits that the CPU has and the
// OS supports.
func (r registers) features() Features {
	f := Features{}
	for name, b := range cpuidBits {
		leaf := r.leaf1
		if b.leaf7 {
			leaf = r.leaf7
		}
		if leaf[b.reg]>>b.bit&1 == 1 && r.xcr0&b.state == b.state {
			f[name] = true
		}
	}
	return f
}
