// Package llvmgen generates an optimizer's fused kernels as one LLVM module
// (github.com/llir/llvm v0.3.6, LLVM 14 syntax) that holds both targets:
//
//   - for NVIDIA GPUs, NVPTX kernels (the ptx_kernel calling convention):
//     <name>_step, a grid-stride loop over groups of four coordinates with
//     128-bit loads and stores where the buffers are aligned, then the head
//     and tail one at a time; the privatize kernels (per-example clipping)
//     and the diagnostics' kernels;
//   - for the CPU, host functions over a range [lo, hi) of coordinates:
//     <name>_cpu and the privatize and diagnostic functions, each with
//     AVX2 and AVX-512 twins compiled with exactly the LLVM target
//     features package hostisa lists for them.
//
// The per-coordinate step is emitted once (<name>_body) and inlined into
// both; both draw the DP noise in the kernel with fibergen's generator
// (package rng, docs/noise.md), emitted operation for operation, so the PTX,
// the host functions and the Go reference of package gogen agree bit for
// bit. Toolchain turns the module into PTX (llc -march=nvptx64) and into a
// host shared object (opt, llc, ld).
//
// Every entry point's signature is written once, in abi.go: the emitters
// build the LLVM functions from it, and Module.Kernels describes it, in the
// manifest's terms (package manifest), for the runtime and for bindings in
// other languages (docs/kernels.md).
package llvmgen
