package ir_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
)

// TestJSONRoundTrip encodes every shipped optimizer and the test programs
// and decodes them to the same dump.
func TestJSONRoundTrip(t *testing.T) {
	paths, _ := filepath.Glob("../optimizers/*.dsl")
	more, _ := filepath.Glob("../tests/testdata/dsl/*.dsl")
	more = append(more, "../runtime/testdata/storage.dsl") // storage types
	for _, path := range append(paths, more...) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fn, errs, err := irtest.Compile(path, src)
		if len(errs) > 0 || err != nil {
			t.Fatalf("%s: %v %v", path, errs, err)
		}
		data, err := json.Marshal(fn)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		back, err := ir.UnmarshalFunc(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if back.String() != fn.String() {
			t.Errorf("%s: the round trip changed the dump:\n%s\nwant:\n%s", path, back, fn)
		}
	}
}

// TestUnmarshalFuncErrors feeds broken encodings: each is an error, never a
// panic.
func TestUnmarshalFuncErrors(t *testing.T) {
	good := `{"name":"a","hypers":[],"states":[],"init":{"name":"init","values":[]},"observe_args":{"name":"observe","values":[]},"step":{"name":"step","values":[{"op":"load","type":"f32","name":"g"},{"op":"store","type":"none","args":[0],"name":"theta"}]}}`
	if _, err := ir.UnmarshalFunc([]byte(good)); err != nil {
		t.Fatalf("the good encoding fails: %v", err)
	}
	for _, c := range []struct{ name, from, to, msg string }{
		{"not json", good, "{", "unexpected end"},
		{"unknown op", `"op":"load"`, `"op":"frob"`, "unknown op"},
		{"unknown type", `"type":"f32"`, `"type":"f16"`, "unknown op"},
		{"forward operand", `"args":[0]`, `"args":[1]`, "operand out of order"},
		{"missing block", `"init":{"name":"init","values":[]},`, ``, "block is missing"},
		{"bad range", `"hypers":[]`, `"hypers":[{"name":"lr","default":1,"range":{"lo":"x","hi":"1"}}]`, "bad range"},
		{"bad number", `"hypers":[]`, `"hypers":[{"name":"lr","default":"one"}]`, "bad number"},
		{"no store of theta", `,{"op":"store","type":"none","args":[0],"name":"theta"}`, ``, "theta"},
	} {
		data := strings.Replace(good, c.from, c.to, 1)
		_, err := ir.UnmarshalFunc([]byte(data))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.msg)
		}
	}
}
