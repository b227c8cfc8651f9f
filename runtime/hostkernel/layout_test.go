package hostkernel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/codegen/llvmgen"
)

// TestStructsMatchLLVM holds the Go mirrors of the host ABI's structs to
// the layout that llc gives the code generator's structs on this machine:
// every field at the same offset with the same size, and the same size in
// all.
func TestStructsMatchLLVM(t *testing.T) {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		t.Fatal(err)
	}
	mirrors := map[string]reflect.Type{"fibergen_range": reflect.TypeFor[Range](), "fibergen_privatize": reflect.TypeFor[privatizeC](),
		"fibergen_privatize_piece": reflect.TypeFor[pieceC]()}
	if len(mirrors) != len(llvmgen.HostStructs) {
		t.Fatalf("mirrors of %d structs, the ABI has %v", len(mirrors), llvmgen.HostStructs)
	}
	for _, tag := range llvmgen.HostStructs {
		fields, size, err := tc.HostStructLayout(tag)
		if err != nil {
			t.Fatal(err)
		}
		checkMirror(t, tag, mirrors[tag], fields, size)
	}
}

// checkMirror compares the Go struct g, whose fields have the C fields'
// names (any case, without underscores), with the layout of struct tag.
func checkMirror(t *testing.T, tag string, g reflect.Type, fields []llvmgen.Field, size int64) {
	t.Helper()
	if g == nil || g.NumField() != len(fields) || int64(g.Size()) != size {
		t.Fatalf("struct %s: %d fields, %d bytes in LLVM; the Go mirror %v differs", tag, len(fields), size, g)
	}
	for i, f := range fields {
		gf := g.Field(i)
		if !strings.EqualFold(gf.Name, strings.ReplaceAll(f.Name, "_", "")) || int64(gf.Offset) != f.Offset || int64(gf.Type.Size()) != f.Size {
			t.Errorf("struct %s field %d: LLVM %s at %d, %d bytes; Go %s at %d, %d bytes",
				tag, i, f.Name, f.Offset, f.Size, gf.Name, gf.Offset, gf.Type.Size())
		}
	}
}
