// Package ir is fibergen's intermediate representation: a typed,
// per-coordinate SSA form of an optimizer's step, lowered from a checked
// dsl.File, with a canonical text dump and a pipeline of passes.
//
// Every value is either uniform (the same for all coordinates: hypers, the
// step index, the noise variance and whatever is computed from them only;
// float64, computed on the host once per step) or varying (per-coordinate;
// float32, computed by the kernel). An f32 conversion of a uniform value is a
// host scalar: the host computes it and passes it to the kernel.
//
// A Func holds three blocks: init (the states' initial values), observe (the
// observation's weights, per step) and step (the recursion itself), plus one
// model block per Filter. Passes are values in one list, Pipeline; rewrites
// are named for what they do (FoldConstants, HoistUniforms), analyses for
// what they find (HostScalars, AnalyzeNoise).
//
// The noise analysis (AnalyzeNoise) finds the linear state-space model
// z_t = M z_{t-1} + b w_t by which the DP noise in g reaches each state;
// Solve derives the state's attenuation from it exactly (package poly), and
// Lower replaces attenuation(s) by that closed form, or leaves the host an
// OpAtten (and attenuation_t an OpAttenT) to compute from the Filter.
//
// The package depends only on dsl, ir/poly and the standard library.
package ir
