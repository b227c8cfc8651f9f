package main

import (
	"go/parser"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCtype: each cgo parameter type has its ctypes twin; a Go type is
// refused.
func TestCtype(t *testing.T) {
	for _, c := range []struct{ goType, want string }{
		{"C.int64_t", "c_int64"},
		{"*C.char", "c_char_p"},
		{"**C.char", "POINTER(c_void_p)"},
		{"*unsafe.Pointer", "POINTER(c_void_p)"},
		{"unsafe.Pointer", "c_void_p"},
		{"**C.float", "POINTER(POINTER(c_float))"},
		{"*C.uint64_t", "POINTER(c_uint64)"},
		{"C.size_t", "c_size_t"},
		{"int", ""},
		{"C.long", ""},
	} {
		e, err := parser.ParseExpr(c.goType)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ctype(e)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v; want %q", c.goType, got, err, c.want)
		}
	}
}

// TestABICurrent: the committed _abi.py is what genpy writes from capi/
// now (make generate-check checks it too).
func TestABICurrent(t *testing.T) {
	a, err := parseABI(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	got := a.python()
	want, err := os.ReadFile(filepath.Join("..", "..", "..", "python", "fibergen", "_abi.py"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("python/fibergen/_abi.py is stale (go generate ./capi) (-committed +generated):\n%s", d)
	}
	if a.defines[0].name != "ABI_VERSION" || a.defines[0].value < 1 || len(a.funcs) < 30 {
		t.Errorf("defines %v, %d functions", a.defines, len(a.funcs))
	}
}
