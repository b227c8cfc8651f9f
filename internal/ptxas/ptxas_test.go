package ptxas

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	report := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'fiber_clamp_mass' for 'sm_90'
ptxas info    : Function properties for fiber_clamp_mass
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 44 registers
ptxas info    : Compiling entry function 'fiber_step' for 'sm_80'
ptxas info    : Function properties for fiber_step
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 100 registers, 504 bytes cmem[0]
`
	got, err := parse(report)
	if err != nil {
		t.Fatal(err)
	}
	want := []Kernel{{"fiber_clamp_mass", "sm_90", 44, 0, 0, 0}, {"fiber_step", "sm_80", 100, 8, 4, 12}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parse (-want +got):\n%s", d)
	}
	if _, err := parse("ptxas info    : Compiling entry function 'k' for 'sm_80'\n"); err == nil {
		t.Error("a report without registers parsed")
	}
}

func TestMaxThreads(t *testing.T) {
	for _, c := range []struct{ regs, want int }{{32, 1024}, {64, 1024}, {72, 896}, {79, 768}, {92, 640}, {100, 512}, {104, 512}, {128, 512}, {255, 256}} {
		if got := MaxThreads(c.regs); got != c.want {
			t.Errorf("MaxThreads(%d) = %d, want %d", c.regs, got, c.want)
		}
	}
}

func TestFits(t *testing.T) {
	step := Kernel{Name: "fiber_step", Arch: "sm_90", Registers: 100}
	if err := step.Fits(256); err != nil {
		t.Error(err)
	}
	if err := step.Fits(1024); err == nil {
		t.Error("100 registers × 1024 threads fit")
	}
	if err := (Kernel{Registers: 32, SpillStores: 4}).Fits(32); err == nil {
		t.Error("a kernel with spills fits")
	}
}
