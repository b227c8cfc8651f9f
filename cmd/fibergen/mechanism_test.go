package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/corrnoise"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/google/go-cmp/cmp"
)

// The command reports what corrnoise.Design computes and writes its noise
// block, the literals reading back as the filter's float32 values.
func TestMechanismMatchesPackage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "noise.dsl")
	r := mustRun(t, "mechanism", "--steps", "200", "--min-sep", "20", "--buffers", "2", "--objective=mean", "--out", out, "--json")
	var got mechanismReport
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	want, err := corrnoise.Design(200, 20, 2, corrnoise.Mean)
	if err != nil {
		t.Fatal(err)
	}
	want.CompareDense()
	got.Mechanism.Objective = corrnoise.Mean // not in the JSON: the "objective" string is
	if d := cmp.Diff(want, got.Mechanism); d != "" || got.Objective != "mean" || got.Ratio != want.Ratio() {
		t.Errorf("JSON against corrnoise.Design (-want +got):\n%s\nobjective %q ratio %v", d, got.Objective, got.Ratio)
	}
	mustRun(t, "mechanism", "--steps", "200", "--min-sep", "20", "--buffers", "2", "--objective=mean", "--out", out) // over a block it wrote
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkNoiseBlock(t, string(data), want.Noise)
}

// checkNoiseBlock checks the comment line and that the block's literals
// are the filter's decays and weights, in the order the DSL runs them.
func checkNoiseBlock(t *testing.T, text string, b corrnoise.BLT) {
	t.Helper()
	comment, block, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(comment, "// BLT noise: n = 200, b = 20, d = 2") {
		t.Errorf("comment line %q", comment)
	}
	w, updates := "\tw = z", ""
	want := "noise {\n"
	for i := range b.Decay {
		s := "s" + strconv.Itoa(i+1)
		want += "\tbuffer " + s + "\n"
		w += " - " + strconv.FormatFloat(-b.Weight[i], 'g', -1, 32) + " * " + s // the shortest float32 spelling reads back alike
		updates += "\t" + s + " = " + strconv.FormatFloat(b.Decay[i], 'g', -1, 32) + " * " + s + " + z\n"
	}
	want += w + "\n" + updates + "}\n"
	if normalize(block) != want {
		t.Errorf("block:\n%s\nwant:\n%s", block, want)
	}
}

// normalize respells every number of a block as the shortest float32
// that reads back alike (the block has nine digits).
func normalize(block string) string {
	return regexp.MustCompile(`[0-9][0-9.e+-]*[0-9]`).ReplaceAllStringFunc(block, func(x string) string {
		v, err := strconv.ParseFloat(x, 32)
		if err != nil {
			return x
		}
		return strconv.FormatFloat(v, 'g', -1, 32)
	})
}

func TestMechanismText(t *testing.T) {
	for _, c := range []struct {
		args  []string
		dense string
	}{
		{[]string{"--steps=60", "--min-sep=60", "--objective=mean"}, "optimal dense factorization (one participation, Denisov et al. 2022): mean "},
		{[]string{"--steps=60", "--min-sep=6", "--objective=mean"}, "optimal dense factorization (10 participations, fixed epochs of 6 steps, Choquette-Choo et al. 2023): mean "},
		{[]string{"--steps=24", "--min-sep=6"}, "optimal dense factorization (4 participations, fixed epochs of 6 steps, Choquette-Choo et al. 2023): max "},
	} {
		r := mustRun(t, append([]string{"mechanism", "--buffers=1"}, c.args...)...)
		for _, want := range []string{"noise filter C⁻¹", "strategy C", "sensitivity", "DP-SGD:", "ratio to DP-SGD", c.dense} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args, want, r.stdout)
			}
		}
	}
	for _, json := range []string{"--json=false", "--json"} {
		if r := mustRun(t, "mechanism", "--buffers=1", "--steps=24", "--min-sep=6", "--dense=false", json); strings.Contains(r.stdout, "dense") {
			t.Errorf("--dense=false %s: %s", json, r.stdout)
		}
	}
}

// A usage error is one line naming the flag, exit status 2; nothing is
// written, an old --out file stays as it was.
func TestMechanismBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "old.dsl")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args string
		code int
		msg  string
	}{
		{"--min-sep 1 --buffers 1", 2, `--steps is required`},
		{"--steps 10 --buffers 1", 2, `--min-sep is required`},
		{"--steps 10 --min-sep 1", 2, `--buffers is required`},
		{"--steps 0 --min-sep 1 --buffers 1", 2, `--steps 0: want 1 to`},
		{"--steps ten --min-sep 1 --buffers 1", 2, `--steps "ten": want an integer`},
		{"--steps 10 --min-sep 0 --buffers 1", 2, `--min-sep 0: want 1 to --steps \(10\)`},
		{"--steps 10 --min-sep 11 --buffers 1", 2, `--min-sep 11: want 1 to --steps \(10\)`},
		{"--steps 10 --min-sep 5 --buffers 0", 2, `--buffers 0: want 1 to 8`},
		{"--steps 10 --min-sep 5 --buffers 9", 2, `--buffers 9: want 1 to 8`},
		{"--steps 10 --min-sep 5 --buffers 1 --objective median", 2, `--objective "median": want max or mean`},
		{"--steps 10 --min-sep 5 --buffers 1 extra", 2, `unexpected argument "extra"`},
		{"--steps 10 --min-sep 5 --buffers 1", 2, `--out .*old\.dsl: the file exists and is not a noise block fibergen mechanism wrote; --out writes only the noise \{ \.\.\. \} block`},
		{"--steps 10 --min-sep 5 --buffers 1 --frob", 2, `unknown flag --frob`},
		{"--steps 10 --min-sep 5 --buffers 1 --out " + filepath.Join(out, "x.dsl"), 1, `--out .*x\.dsl: `},
	} {
		args := append([]string{"mechanism"}, strings.Fields(c.args)...)
		if !strings.Contains(c.args, "--out") {
			args = append(args, "--out", out)
		}
		r := runMain(args...)
		checkOneLine(t, r.stderr)
		if r.code != c.code || !regexp.MustCompile(`^fibergen mechanism: .*`+c.msg).MatchString(r.stderr) || r.stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit %d matching %q", c.args, r.code, r.stderr, r.stdout, c.code, c.msg)
		}
		if data, _ := os.ReadFile(out); string(data) != "old" {
			t.Errorf("%s: --out was written: %q", c.args, data)
		}
	}
}

// TestMechanismShippedSettings checks the settings mechanism prints for
// the shipped BLT optimizers: each optimizer takes them and then runs the
// designed filter, to float32's resolution of its literals; a design of
// more buffers than theirs gets none and a line that says why; and the
// shipped defaults are the design of 2000 steps, minimum separation 200,
// two buffers, bit for bit.
func TestMechanismShippedSettings(t *testing.T) {
	units := map[string]*pipeline.Unit{}
	for _, name := range shippedBLT {
		if units[name] = compileFile(optPath(name), &strings.Builder{}); units[name] == nil {
			t.Fatalf("%s does not compile", name)
		}
	}
	for _, c := range []struct {
		steps, minSep, buffers string
		defaults, none         bool // the shipped defaults; no settings (too many buffers)
	}{
		{steps: "2000", minSep: "200", buffers: "2", defaults: true},
		{steps: "300", minSep: "30", buffers: "1"},
		{steps: "100", minSep: "1", buffers: "2"}, // DP-SGD: no buffer used
		{steps: "300", minSep: "300", buffers: "3", none: true},
	} {
		args := []string{"mechanism", "--steps", c.steps, "--min-sep", c.minSep, "--buffers", c.buffers}
		var design mechanismReport
		if err := json.Unmarshal([]byte(mustRun(t, append(args, "--json")...).stdout), &design); err != nil {
			t.Fatal(err)
		}
		text := mustRun(t, args...).stdout
		if c.none {
			if design.Shipped != nil || !strings.Contains(text, "have 2 buffers: design with --buffers 2 or fewer") {
				t.Errorf("%v: shipped %+v, text %q; want none and why", args, design.Shipped, text)
			}
			continue
		}
		if design.Shipped == nil || !slices.Equal(design.Shipped.Optimizers, shippedBLT) {
			t.Fatalf("%v: shipped %+v, want settings for %v", args, design.Shipped, shippedBLT)
		}
		set := design.Shipped.Set
		if want := "for optimizers/blt_sgd.dsl and blt_adam.dsl: --set " + strings.Join(set, " --set ") + "\n"; !strings.HasSuffix(text, want) {
			t.Errorf("%v: text ends %q, want %q", args, text[max(0, len(text)-len(want)):], want)
		}
		for name, u := range units {
			checkShippedFilter(t, u, set, design.Noise, c.defaults)
			if t.Failed() {
				t.Fatalf("%s, %v: settings %v", name, args, set)
			}
		}
	}
}

// checkShippedFilter checks that settings give u the noise filter b and,
// with defaults, that they are u's defaults.
func checkShippedFilter(t *testing.T, u *pipeline.Unit, settings []string, b corrnoise.BLT, defaults bool) {
	t.Helper()
	h, err := u.Func.ApplySettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if defaults && !slices.Equal(h, u.Func.DefaultHypers()) {
		t.Errorf("the defaults %v are not the design's %v", u.Func.DefaultHypers(), h)
	}
	got, want := u.Func.NoiseCoefficients(h, 60), b.Coefficients(60)
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-8 {
			t.Errorf("c_%d = %v, the design's %v", k, got[k], w)
		}
	}
}

// --out replaces only what mechanism wrote, or an empty file: a block
// with an optimizer after it, or an optimizer, is refused and kept.
func TestMechanismOutGuard(t *testing.T) {
	dir := t.TempDir()
	block := filepath.Join(dir, "block.dsl")
	mustRun(t, "mechanism", "--steps", "10", "--min-sep", "5", "--buffers", "1", "--out", block)
	written, err := os.ReadFile(block)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(optPath("blt_sgd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, content string
		refused       bool
	}{
		{"its own block", string(written), false},
		{"empty", "", false},
		{"its block, then an optimizer", string(written) + "optimizer mine\n", true},
		{"its header, then an optimizer", blockHeader + "n = 10\n" + string(shipped), true},
		{"an optimizer", string(shipped), true},
	} {
		out := filepath.Join(dir, "out.dsl")
		if err := os.WriteFile(out, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runMain("mechanism", "--steps", "10", "--min-sep", "5", "--buffers", "1", "--out", out)
		data, _ := os.ReadFile(out)
		if refused := r.code == 2 && strings.Contains(r.stderr, "is not a noise block fibergen mechanism wrote"); refused != c.refused ||
			refused && string(data) != c.content || !refused && (r.code != 0 || string(data) != string(written)) {
			t.Errorf("%s: exit %d, stderr %q, file now %q; want refused %v", c.name, r.code, r.stderr, data, c.refused)
		}
	}
}
