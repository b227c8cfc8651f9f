package lang

import (
	"maps"
	"testing"
)

// TestCalls: the built-ins the DSL calls by name are exactly the
// operations spelled with one.
func TestCalls(t *testing.T) {
	want := map[string]Op{"sqrt": Sqrt, "abs": Abs, "min": Min, "max": Max, "sign": Sign,
		"exp": Exp, "log": Log, "sin": Sin, "cos": Cos, "select": Select}
	if !maps.Equal(want, Calls) {
		t.Errorf("Calls = %v, want %v", Calls, want)
	}
}
