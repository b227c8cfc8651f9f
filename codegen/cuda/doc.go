// Package cuda will generate the fused optimizer kernel through LLVM IR
// (github.com/llir/llvm): an NVPTX kernel turned into PTX by llc and the same
// per-coordinate body as a host function for the CPU, bit-exact with the Go
// reference of package gogen. It is empty until the kernel backend lands
// (see docs/decisions.md); nothing imports it yet.
package cuda
