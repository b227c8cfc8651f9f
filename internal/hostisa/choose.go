package hostisa

import (
	"fmt"
	"strings"
)

// EnvVar names the environment variable that forces a variant: one the
// CPU runs, usually a narrower one than Choose would pick.
const EnvVar = "FIBERGEN_HOST_ISA"

// Verdict says whether one variant was chosen, and why.
type Verdict struct {
	Name   string `json:"name"`
	Chosen bool   `json:"chosen"`
	// Reason is why it was not chosen ("the CPU lacks avx512bw", "avx512
	// is wider", "FIBERGEN_HOST_ISA=avx2"), or, chosen, that it was forced;
	// "" for the widest variant the CPU runs.
	Reason  string   `json:"reason,omitempty"`
	Missing []string `json:"missing,omitempty"` // the features the CPU lacks
}

// String is "avx512: chosen" or "avx2: not chosen, the CPU lacks avx2".
func (v Verdict) String() string {
	s := v.Name + ": not chosen"
	if v.Chosen {
		s = v.Name + ": chosen"
	}
	if v.Reason != "" {
		s += ", " + v.Reason
	}
	return s
}

// Choice is the variant chosen for a CPU and the verdict on each variant,
// the widest first.
type Choice struct {
	Chosen   string    `json:"chosen"`
	Variants []Verdict `json:"variants"`
}

// String lists the verdicts: "avx512: chosen; avx2: not chosen, avx512 is
// wider; ...".
func (c Choice) String() string {
	parts := make([]string, len(c.Variants))
	for i, v := range c.Variants {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// Runnable lists the chosen variant and the narrower ones the CPU runs,
// the widest first.
func (c Choice) Runnable() []string {
	var out []string
	for _, v := range c.Variants {
		if (v.Chosen || len(out) > 0) && len(v.Missing) == 0 {
			out = append(out, v.Name)
		}
	}
	return out
}

// Missing lists the features of v that cpu lacks, in v's order.
func (v Variant) Missing(cpu Features) []string {
	var out []string
	for _, f := range v.Features {
		if !cpu[f] {
			out = append(out, f)
		}
	}
	return out
}

// Choose picks from r the widest variant whose features cpu has, or the
// variant named force ("" for none), which cpu must run: an unknown name
// is an error that lists the valid ones, and a variant cpu cannot run an
// error that names the features it lacks.
func Choose(r Recipe, cpu Features, force string) (Choice, error) {
	if _, ok := r.ByName(force); !ok && force != "" {
		return Choice{}, fmt.Errorf("%s=%s is not a variant: want %s", EnvVar, force, r.names())
	}
	var c Choice
	for i := len(r) - 1; i >= 0; i-- {
		c.Variants = append(c.Variants, c.verdict(r[i], cpu, force))
	}
	if v, _ := r.ByName(force); force != "" && c.Chosen != force {
		return Choice{}, fmt.Errorf("%s=%s: this CPU lacks %s, which the %s variant is compiled for; it runs %s",
			EnvVar, force, strings.Join(v.Missing(cpu), ", "), force, orList(c.runs()))
	}
	return c, nil
}

// verdict judges v, given the verdicts on the wider variants so far in c,
// and records v in c.Chosen if it is chosen.
func (c *Choice) verdict(v Variant, cpu Features, force string) Verdict {
	d := Verdict{Name: v.Name, Missing: v.Missing(cpu)}
	switch {
	case len(d.Missing) > 0:
		d.Reason = "the CPU lacks " + strings.Join(d.Missing, ", ")
	case c.Chosen != "":
		d.Reason = c.Chosen + " is wider"
	case force != "" && force != v.Name:
		d.Reason = EnvVar + "=" + force
	default:
		d.Chosen, c.Chosen = true, v.Name
		if force != "" {
			d.Reason = EnvVar + "=" + force
		}
	}
	return d
}

// runs lists the variants the CPU runs, the widest first.
func (c Choice) runs() []string {
	var out []string
	for _, v := range c.Variants {
		if len(v.Missing) == 0 {
			out = append(out, v.Name)
		}
	}
	return out
}
