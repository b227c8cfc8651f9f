package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/internal/hostisa"
)

// HostISA is the host kernel's instruction-set variants as a build
// compiles them and which of them this CPU runs (explain --host-isa).
type HostISA struct {
	Chosen   string        `json:"chosen"`
	Variants []HostVariant `json:"variants"` // the widest first
}

// HostVariant is one variant: its verdict on this CPU and what it is
// compiled with.
type HostVariant struct {
	hostisa.Verdict
	Features   []string `json:"features"` // LLVM target features; empty for the triple's baseline
	Tune       string   `json:"tune,omitempty"`
	VectorBits int      `json:"vector_bits"`
}

// DescribeHostISA joins the variants of the recipe r with the verdicts of
// the choice c made from it.
func DescribeHostISA(r hostisa.Recipe, c hostisa.Choice) *HostISA {
	h := &HostISA{Chosen: c.Chosen}
	for _, d := range c.Variants {
		if v, ok := r.ByName(d.Name); ok {
			h.Variants = append(h.Variants, HostVariant{Verdict: d, Features: append([]string{}, v.Features...), Tune: v.Tune, VectorBits: v.VectorBits})
		}
	}
	return h
}

// writeHostISA writes the variants, one a line.
func writeHostISA(w io.Writer, h *HostISA) {
	fmt.Fprintf(w, "\nhost kernel (cpu backend) on this CPU: %s\n", h.Chosen)
	for _, v := range h.Variants {
		features := strings.Join(v.Features, " ")
		if features == "" {
			features = "the architecture's baseline"
		}
		fmt.Fprintf(w, "  %-45s %3d-bit  %s\n", v.Verdict.String(), v.VectorBits, features)
	}
}
