// Package cuda generates an optimizer's fused kernels through LLVM IR
// (github.com/llir/llvm v0.3.6, LLVM 14 syntax): one module per optimizer
// holding the per-coordinate step once (<name>_body), an NVPTX kernel
// <name>_step — a grid-stride loop over groups of four coordinates with
// 128-bit loads and stores where the buffers are aligned, then the head and
// tail one at a time — and a host function <name>_cpu over a range [lo, hi).
// Both draw the DP noise in the kernel with fibergen's generator (package
// rng, docs/noise.md), emitted into the module operation for operation, so
// the PTX kernel, the host kernel and the Go reference of package gogen agree
// bit for bit. Toolchain turns the module into PTX (llc -mcpu=sm_80) and into
// a host shared object (opt, llc, ld); docs/kernels.md describes the ABI.
package cuda
