// Package ir is fibergen's intermediate representation: a typed,
// per-coordinate SSA form of an optimizer's step, with its verifier, a
// canonical text dump, a JSON form (the manifest's "ir"), a pipeline of
// passes, and the evaluation of its host values. Package lower builds it
// from a checked .dsl file; package noise analyzes how the DP noise flows
// through it; the code generators, the interpreter and the runtime read it.
//
// Every value is either uniform (the same for all coordinates: hypers, the
// step index, the noise variance and whatever is computed from them only;
// float64, computed on the host once per step) or varying (per-coordinate;
// float32, computed by the kernel). An f32 conversion of a uniform value is a
// host scalar: the host computes it and passes it to the kernel.
//
// A Func holds blocks of eight kinds (BlockKind): init (the states' initial
// values), observe (the observation's weights, per step), step (the
// recursion itself), one model per Filter (the noise model the host checks
// for stability and solves numerically), one per diagnostic, scalar init
// and scalar step (the scalars' values before step 0 and at step t from
// those at t-1) and hyper defaults (the derived hypers' defaults from
// earlier hypers). Passes are
// values in one list, Pipeline, and are rewrites named for what they do
// (FoldConstants, HoistUniforms, passes.go); analyses are named for what they
// find (HostScalars, DependsOnStep, analysis.go); ExprString prints a value
// back in DSL syntax (print.go). What each operation computes is package
// lang's (eval.go).
//
// The package depends only on lang, gain and the standard library.
package ir
