// Package tests holds whole-system, differential and regression tests of
// fibergen.
//
// The tests check fibergen's outputs against each other and against the
// hand-written float64 oracles of package tests/oracle:
//
//   - oracle_test.go: the generated Go packages and `fibergen run` against
//     the oracles of the paper's algorithms, within a rigorous bound on
//     float32 rounding (bound_test.go);
//   - differential_test.go: the IR interpreter, the generated packages and
//     `fibergen run` agree bit for bit;
//   - generated_test.go: the checked-in generated/ packages are what the
//     compiler produces today;
//   - codegen_test.go: code generated from unusual DSL files (testdata/dsl)
//     vets, builds and runs like the interpreter.
package tests
