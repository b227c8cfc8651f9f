package ir_test

import (
	"os"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
)

// TestFixedFloor checks which shipped optimizers floor their corrected
// second moment at a fixed value (the clamp warning's condition): a
// hyper-only floor is fixed, one scaled by sigma_w2 or per coordinate is
// not.
func TestFixedFloor(t *testing.T) {
	for name, want := range map[string]bool{
		"fiber": true, "disk_corr": true, "dp_adambc": true, "fiber_cosine": true, "fiber_nocorr": true,
		"fiber_nfloor": false, "fiber_rfloor": false,
	} {
		src, err := os.ReadFile("../optimizers/" + name + ".dsl")
		if err != nil {
			t.Fatal(err)
		}
		fn, _ := irtest.Build(t, string(src))
		d := fn.Diagnostic("clamp_mass")
		if d == nil {
			t.Fatalf("%s declares no clamp_mass", name)
		}
		if got := d.FixedFloor(); got != want {
			t.Errorf("%s: FixedFloor() = %v (floor %s), want %v", name, got, ir.ExprString(d.Floor()), want)
		}
	}
}
