// Package gogen generates the Go reference implementation of an optimizer
// from its optimized IR, with github.com/dave/jennifer.
//
// The generated package has typed hyperparameters (defaults from the DSL,
// range-checked on override), HostScalars (the per-step uniform values the
// kernel reads, computed in float64 and rounded once), Init, Step over
// float32 slices, and an Optimizer that ties them together. Every float32
// operation is wrapped in an explicit float32(...) conversion so that the Go
// compiler cannot fuse a multiply and an add: the result is the same bits on
// every architecture, and the same bits as the interpreter (ir/interp).
package gogen
