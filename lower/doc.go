// Package lower is fibergen's front end into the IR: it translates a checked
// .dsl file (package dsl) into an ir.Func and optimizes it (Build). It runs
// the noise analysis (package noise) on the step as it lowers it, resolves
// every attenuation(s) to the closed form that noise.Solve derives —
// printed back into the DSL (closedform.go) and lowered like the user's own
// expressions — or to a filter the host solves numerically, and reports the
// errors of the source that only lowering finds (an attenuation without a
// linear, stable filter) as a positioned dsl.ErrorList.
//
// It is the bridge between the DSL's syntax tree and the IR; the trainer's
// side (runtime, the interpreter) reads the IR without the DSL.
package lower
