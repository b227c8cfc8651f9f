//go:build !amd64

package hostisa

// hostRegisters is empty off x86-64, whose only variant needs no feature.
func hostRegisters() registers { return registers{} }
