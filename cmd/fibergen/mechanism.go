package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/fibergen/fibergen/corrnoise"
	"github.com/fibergen/fibergen/internal/fileout"
)

// mechanismOptions are the flags of fibergen mechanism.
type mechanismOptions struct {
	steps, minSep, buffers uintFlag
	objective, out         string
	json, dense            bool
	given                  map[string]bool
}

// cmdMechanism designs a BLT noise filter (package corrnoise), prints its
// figures and writes its DSL noise block to --out.
func cmdMechanism(args []string, stdout, stderr io.Writer) int {
	o := mechanismOptions{given: map[string]bool{}}
	fs := flag.NewFlagSet("mechanism", flag.ContinueOnError)
	o.define(fs)
	pos, ok := parseFlags(fs, args, stderr)
	if !ok {
		return 2
	}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	obj, msg := o.check(pos)
	if msg == "" {
		msg = checkBlockOut(o.out)
	}
	if msg != "" {
		return usageError(stderr, "mechanism", "%s", msg)
	}
	m, err := corrnoise.Design(int(o.steps), int(o.minSep), int(o.buffers), obj)
	if err != nil {
		return fail(stderr, "mechanism", fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "corrnoise: ")))
	}
	if o.dense {
		m.CompareDense()
	}
	if o.out != "" {
		if err := fileout.Write(o.out, 0o644, func(w io.Writer) error { return writeNoiseBlock(w, m) }); err != nil {
			return fail(stderr, "mechanism", fmt.Errorf("--out %s: %w", o.out, err))
		}
	}
	if o.json {
		return printMechanismJSON(stdout, stderr, m)
	}
	printMechanism(stdout, m)
	return 0
}

func (o *mechanismOptions) define(fs *flag.FlagSet) {
	fs.Var(&o.steps, "steps", "number of steps n")
	fs.Var(&o.minSep, "min-sep", "minimum separation b of an example's steps, in [1, n] (n: one participation)")
	fs.Var(&o.buffers, "buffers", "number of noise buffers d, 1 to 8")
	fs.StringVar(&o.objective, "objective", "max", "max or mean: the error at unit sensitivity to minimise")
	fs.StringVar(&o.out, "out", "", "write the noise { … } block, to paste into an optimizer's file, to FILE (a new file, or one mechanism wrote)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.BoolVar(&o.dense, "dense", true, "compare with the optimal dense factorization where the steps are few (--dense=false: skip it; for max it takes up to a minute)")
}

// check checks the flags, which need no file, and returns the objective or
// a usage message naming the flag.
func (o *mechanismOptions) check(pos []string) (corrnoise.Objective, string) {
	if len(pos) > 0 {
		return 0, fmt.Sprintf("unexpected argument %q", pos[0])
	}
	for _, f := range []string{"steps", "min-sep", "buffers"} {
		if !o.given[f] {
			return 0, fmt.Sprintf("--%s is required", f)
		}
	}
	if msg := checkParticipation(uint64(o.steps), uint64(o.minSep), 1<<24); msg != "" {
		return 0, msg
	}
	if o.buffers < 1 || o.buffers > corrnoise.MaxBuffers {
		return 0, fmt.Sprintf("--buffers %d: want 1 to %d", o.buffers, corrnoise.MaxBuffers)
	}
	obj, err := corrnoise.ParseObjective(o.objective)
	if err != nil {
		return 0, fmt.Sprintf("--objective %q: want max or mean", o.objective)
	}
	return obj, ""
}

// blockHeader starts every file mechanism writes (writeNoiseBlock).
const blockHeader = "// BLT noise: "

// writtenBlock is a whole file mechanism writes: the header line and the
// noise block, nothing else; maxBlockFile bounds its size (eight buffers
// take about 600 bytes).
var writtenBlock = regexp.MustCompile(`^// BLT noise: [^\n]*\nnoise \{\n[^{}]*\}\n$`)

const maxBlockFile = 1 << 12

// checkBlockOut refuses an --out that names an existing file that is not
// a block mechanism wrote, or that it cannot read to tell: the block is a
// fragment to paste into an optimizer's file, and writing it over one
// would lose the optimizer. An empty file loses nothing; a path that is
// not a regular file is left to the write, which refuses it.
func checkBlockOut(out string) string {
	target, err := fileout.Target(out)
	if out == "" || err != nil {
		return ""
	}
	f, err := os.Open(target)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) { // the write says why it cannot create it
		return ""
	}
	if err != nil {
		return fmt.Sprintf("--out %s: %v: cannot tell whether it is a noise block mechanism wrote", out, fileout.RootCause(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBlockFile+1))
	if err == nil && (len(data) == 0 || writtenBlock.Match(data)) {
		return ""
	}
	return fmt.Sprintf("--out %s: the file exists and is not a noise block fibergen mechanism wrote; "+
		"--out writes only the noise { ... } block, to paste into an optimizer's file: name a new file", out)
}

// checkParticipation checks --steps (at most maxSteps) and --min-sep,
// explain's and mechanism's, and returns a message naming the flag that
// is wrong, or "".
func checkParticipation(steps, minSep, maxSteps uint64) string {
	switch {
	case steps < 1 || steps > maxSteps:
		return fmt.Sprintf("--steps %d: want 1 to %d", steps, maxSteps)
	case minSep < 1 || minSep > steps:
		return fmt.Sprintf("--min-sep %d: want 1 to --steps (%d)", minSep, steps)
	}
	return ""
}

// writeNoiseBlock writes the DSL noise block of m's filter, after a
// comment line with the setting and the figures.
func writeNoiseBlock(w io.Writer, m corrnoise.Mechanism) error {
	_, err := fmt.Fprintf(w, blockHeader+"n = %d, b = %d, d = %d (%d used); %s error at unit sensitivity %.6g (DP-SGD %.6g, ratio %.4g), sensitivity %.6g\n%s",
		m.Steps, m.MinSep, m.BuffersAsked, m.Buffers, m.Objective, m.Loss.Of(m.Objective), m.DPSGD.Of(m.Objective), m.Ratio(), m.Loss.Sensitivity, noiseBlock(m.Noise))
	return err
}

// noiseBlock returns the DSL noise block of the filter 1 + Σ ω̂_i x/(1 − θ̂_i x):
// w reads the buffers' old values, then each buffer decays and takes z.
// The literals are float32 values, written to read back exactly.
func noiseBlock(b corrnoise.BLT) string {
	var s strings.Builder
	s.WriteString("noise {\n")
	for i := range b.Decay {
		fmt.Fprintf(&s, "\tbuffer s%d\n", i+1)
	}
	s.WriteString("\tw = z")
	for i, wt := range b.Weight {
		op := "+"
		if wt < 0 {
			op, wt = "-", -wt
		}
		fmt.Fprintf(&s, " %s %s * s%d", op, literal(wt), i+1)
	}
	s.WriteString("\n")
	for i, t := range b.Decay {
		fmt.Fprintf(&s, "\ts%d = %s * s%d + z\n", i+1, literal(t), i+1)
	}
	s.WriteString("}\n")
	return s.String()
}

// literal spells a float32 value with the nine significant digits that
// read back as the same float32.
func literal(x float64) string { return fmt.Sprintf("%.9g", float32(x)) }

// shippedBLT are the shipped optimizers whose noise block is a BLT of
// shippedBuffers buffers with the hypers blt_decay<i> and blt_weight<i>.
var shippedBLT = []string{"blt_sgd", "blt_adam"}

const shippedBuffers = 2

// shippedSettings returns the settings that give the shipped BLT
// optimizers the noise filter b — blt_decay<i>, then blt_weight<i>, a
// buffer b does not use at decay and weight 0 — or nil where b has more
// buffers than they do.
func shippedSettings(b corrnoise.BLT) []string {
	if b.Buffers() > shippedBuffers {
		return nil
	}
	decays, weights := make([]string, shippedBuffers), make([]string, shippedBuffers)
	for i := range shippedBuffers {
		d, w := 0.0, 0.0
		if i < b.Buffers() {
			d, w = b.Decay[i], b.Weight[i]
		}
		decays[i] = fmt.Sprintf("blt_decay%d=%s", i+1, literal(d))
		weights[i] = fmt.Sprintf("blt_weight%d=%s", i+1, literal(w))
	}
	return append(decays, weights...)
}

// printShipped prints the --set flags that run the design in the shipped
// BLT optimizers, or why it cannot.
func printShipped(w io.Writer, b corrnoise.BLT) {
	set := shippedSettings(b)
	if set == nil {
		fmt.Fprintf(w, "optimizers/%s.dsl have %d buffers: design with --buffers %d or fewer to run it there\n",
			strings.Join(shippedBLT, ".dsl and "), shippedBuffers, shippedBuffers)
		return
	}
	fmt.Fprintf(w, "for optimizers/%s.dsl: --set %s\n", strings.Join(shippedBLT, ".dsl and "), strings.Join(set, " --set "))
}

// printMechanism prints the design as text.
func printMechanism(w io.Writer, m corrnoise.Mechanism) {
	fmt.Fprintf(w, "steps %d, min separation %d (at most %d participation(s)), buffers %d (%d used), objective %s\n",
		m.Steps, m.MinSep, m.Participations, m.BuffersAsked, m.Buffers, m.Objective)
	fmt.Fprintf(w, "noise filter C⁻¹ (1 + Σ ω̂ x/(1 − θ̂ x), float32): decays %s, weights %s\n", floats(m.Noise.Decay), floats(m.Noise.Weight))
	fmt.Fprintf(w, "strategy C (1 + Σ ω x/(1 − θ x)): decays %s, weights %s\n", floats(m.Strategy.Decay), floats(m.Strategy.Weight))
	fmt.Fprintf(w, "sensitivity %.6g (exact)\n", m.Loss.Sensitivity)
	fmt.Fprintf(w, "error at unit sensitivity: max %.6g, mean %.6g\n", m.Loss.Max(), m.Loss.Mean())
	fmt.Fprintf(w, "DP-SGD:                    max %.6g, mean %.6g\n", m.DPSGD.Max(), m.DPSGD.Mean())
	fmt.Fprintf(w, "ratio to DP-SGD (%s): %.4g\n", m.Objective, m.Ratio())
	printDense(w, m)
	printShipped(w, m.Noise)
}

// printDense prints the optimal dense factorization's loss for the
// objective where the design has it, what bounds it from below (the max
// is found to a gap), and the design's loss over it.
func printDense(w io.Writer, m corrnoise.Mechanism) {
	d := m.Dense
	if d == nil {
		return
	}
	schema := "one participation, Denisov et al. 2022"
	if d.Participations > 1 {
		schema = fmt.Sprintf("%d participations, fixed epochs of %d steps, Choquette-Choo et al. 2023", d.Participations, d.MinSep)
	}
	bound := ""
	if d.Objective == corrnoise.Max {
		bound = fmt.Sprintf(" (the optimum is at least %.6g)", d.LowerBound)
	}
	fmt.Fprintf(w, "optimal dense factorization (%s): %s %.6g%s; the BLT's is %.4g times it\n", schema, d.Objective, d.Loss(), bound, m.Loss.Of(m.Objective)/d.Loss())
}

// floats spells xs as [a b c] with %.9g.
func floats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.9g", x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// mechanismReport is the JSON of fibergen mechanism --json.
type mechanismReport struct {
	corrnoise.Mechanism
	Objective  string  `json:"objective"`
	MaxLoss    float64 `json:"max_loss"`
	MeanLoss   float64 `json:"mean_loss"`
	DPSGDMax   float64 `json:"dp_sgd_max_loss"`
	DPSGDMean  float64 `json:"dp_sgd_mean_loss"`
	Ratio      float64 `json:"ratio"`
	NoiseBlock string  `json:"noise_block"`
	// Shipped are the settings of the shipped BLT optimizers that run the
	// design, absent where it has more buffers than they do.
	Shipped *shippedReport `json:"shipped,omitempty"`
}

// shippedReport is the settings (NAME=VALUE, as --set takes them) that
// give optimizers the designed noise filter.
type shippedReport struct {
	Optimizers []string `json:"optimizers"`
	Set        []string `json:"set"`
}

// printMechanismJSON prints the design as JSON.
func printMechanismJSON(stdout, stderr io.Writer, m corrnoise.Mechanism) int {
	r := mechanismReport{Mechanism: m, Objective: m.Objective.String(), MaxLoss: m.Loss.Max(), MeanLoss: m.Loss.Mean(),
		DPSGDMax: m.DPSGD.Max(), DPSGDMean: m.DPSGD.Mean(), Ratio: m.Ratio(), NoiseBlock: noiseBlock(m.Noise)}
	if set := shippedSettings(m.Noise); set != nil {
		r.Shipped = &shippedReport{Optimizers: shippedBLT, Set: set}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fail(stderr, "mechanism", err)
	}
	fmt.Fprintf(stdout, "%s\n", data)
	return 0
}
