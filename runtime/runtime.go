// Package runtime links fibergen's generated kernels into trainers.
//
// Optimizer is what a trainer uses: Open reads generated/<name>/ (the
// manifest <name>.json and the kernel: <name>.so for the CPU, <name>.ptx for
// CUDA) — never the .dsl, never LLVM; OpenCompiled takes the same from an
// optimizer compiled in this process, OpenPackage a generated Go package
// compiled into the program. Register adds the model's parameter tensors
// to one flat buffer per role (parameters, gradient, each state), so a step
// is one kernel launch however many tensors there are; SetHyper, SetDP
// (σ_w = σ_DP·C/B) or SetNoise, and SetSeed configure it; every iteration
// the trainer sets each tensor's clipped mean gradient (or has Privatize
// clip per-example gradients) and calls Step, which draws the DP noise
// inside the kernel. A gradient with a NaN or ±Inf makes Step change
// nothing and return a *NonFiniteError. Save and Load write and read
// checkpoints; Options.Offset, StepDevice and UseBuffers serve sharded
// trainers and trainers that own their device or host buffers.
// docs/runtime.md is the guide.
//
// The host side of every kernel — the host scalars, the attenuation, the
// stability checks, the noise position, the checkpoint rules, the privacy
// accounting — lives here once; the command line (fibergen run, bench)
// and the bindings (the C ABI of package capi, and through it PyTorch)
// drive it rather than re-implementing it.
package runtime
