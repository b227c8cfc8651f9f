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
//
// Besides the code jennifer builds for the optimizer, every generated
// package carries reference numerics that live in real packages: the noise
// generator (rng/core.go), the reductions and privatize functions
// (reduce/core.go) and the filter numerics it needs (gain/gain.go, renamed
// to unexported names). splice.go parses their embedded source with
// go/parser and prints the needed declarations into the file with
// go/printer, so the generated code and those packages are one text
// (docs/decisions.md, decision 29).
package gogen
