package gain

import (
	_ "embed" // for Source
)

// Source is the text of gain.go, which imports only math and math/big:
// fibergen splices the functions a generated package needs out of it
// (codegen/gogen, splice.go), renamed to unexported names.
//
//go:embed gain.go
var Source string
