package lang

import (
	_ "embed" // for HostMathSource and RangeCheckSource
)

// HostMathSource is the text of hostmath.go, which imports only math,
// math/big and sync: fibergen splices the functions a generated package
// needs out of it (codegen/gogen), so the generated code computes exp, log,
// sin and cos with this very text.
//
//go:embed hostmath.go
var HostMathSource string

// RangeCheckSource is the text of rangecheck.go, which imports nothing:
// fibergen splices InRange into every generated package (codegen/gogen), so
// that the generated hypers' range check is this very text.
//
//go:embed rangecheck.go
var RangeCheckSource string
