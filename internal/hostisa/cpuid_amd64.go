package hostisa

// cpuid executes CPUID for leaf and subleaf.
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// xgetbv reads XCR0, the register state the OS saves; only where CPUID
// reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// hostRegisters reads the CPUID leaves and XCR0 of this CPU.
func hostRegisters() registers {
	maxLeaf, _, _, _ := cpuid(0, 0)
	var r registers
	if maxLeaf >= 1 {
		a, b, c, d := cpuid(1, 0)
		r.leaf1 = [4]uint32{a, b, c, d}
	}
	if maxLeaf >= 7 {
		a, b, c, d := cpuid(7, 0)
		r.leaf7 = [4]uint32{a, b, c, d}
	}
	if r.leaf1[ecx]&osxsave != 0 {
		lo, hi := xgetbv()
		r.xcr0 = uint64(hi)<<32 | uint64(lo)
	}
	return r
}
