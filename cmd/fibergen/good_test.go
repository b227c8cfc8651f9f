package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/google/go-cmp/cmp"
)

// mustRun runs a command line that must succeed with nothing on stderr.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := runMain(args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("fibergen %s: exit status %d, stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"help", "-h", "--help"} {
		r := mustRun(t, arg)
		if !strings.HasPrefix(r.stdout, "usage:\n") || !strings.Contains(r.stdout, "fibergen run SOURCE") {
			t.Errorf("fibergen %s printed %q, want the usage", arg, r.stdout)
		}
	}
}

func TestCheckShipped(t *testing.T) {
	var files []string
	var want strings.Builder
	for _, name := range shipped {
		files = append(files, optPath(name))
		want.WriteString(optPath(name) + ": ok\n")
	}
	r := mustRun(t, append([]string{"check"}, files...)...)
	if r.stdout != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want.String())
	}
}

// TestCheckWarns: a legal file with an unused hyper checks ok, exit 0,
// the warning with its caret on stderr; build does not print it.
func TestCheckWarns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.dsl")
	src := "optimizer w\nhyper lr = 0.1\nhyper wd = 0\nstep { theta = theta - lr * g }\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain("check", path)
	want := path + ":3:7: warning: hyper wd is never used\n\thyper wd = 0\n\t      ^\n"
	if r.code != 0 || r.stdout != path+": ok\n" || r.stderr != want {
		t.Errorf("check: code %d, stdout %q, stderr %q; want 0 and the warning %q", r.code, r.stdout, r.stderr, want)
	}
	if r := mustRun(t, "build", "-o", t.TempDir(), path); strings.Contains(r.stdout, "warning") {
		t.Errorf("build printed %q", r.stdout)
	}
}

// TestCheckGoesOn checks every file whatever the others do: the good ones
// are ok on stdout, the missing one an error, the exit status 1.
func TestCheckGoesOn(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.dsl")
	r := runMain("check", optPath("dp_sgd"), missing, optPath("fiber"))
	if want := optPath("dp_sgd") + ": ok\n" + optPath("fiber") + ": ok\n"; r.code != 1 || r.stdout != want ||
		!strings.Contains(r.stderr, "cannot read "+missing) {
		t.Errorf("check good missing good: code %d, stdout %q, stderr %q; want 1, %q and the missing file named",
			r.code, r.stdout, r.stderr, want)
	}
}

// TestCheckDeepParens: a 10⁵-deep parenthesis, a source line of 200 KB,
// gets its error in three short lines: the message, a window of the line
// cut with "…" and the caret under the parenthesis one level too deep.
func TestCheckDeepParens(t *testing.T) {
	const depth = 100000
	src := "optimizer deep\nstate m = 0\nstep {\n\tm = " + strings.Repeat("(", depth) + "g" + strings.Repeat(")", depth) + "\n\ttheta = theta - m\n}\n"
	path := writeFile(t, t.TempDir(), "deep.dsl", []byte(src))
	r := runMain("check", path)
	lines := strings.Split(r.stderr, "\n")
	if r.code != 1 || len(r.stderr) > 1024 || len(lines) != 4 || !strings.Contains(lines[0], "nested too deeply") {
		t.Fatalf("exit status %d, %d bytes of stderr:\n%.2000s", r.code, len(r.stderr), r.stderr)
	}
	echo, caret := strings.TrimPrefix(lines[1], "\t…"), strings.TrimPrefix(lines[2], "\t ")
	if col := len(caret) - 1; col >= len(echo) || echo[col] != '(' || !strings.HasSuffix(caret, "^") || strings.Trim(caret, " ^") != "" {
		t.Errorf("the caret %q does not stand under a parenthesis of %q", caret, echo)
	}
}

func TestBuildMatchesCheckedIn(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gen")
	args := []string{"build", "-o", out}
	var want strings.Builder
	for _, name := range shipped {
		args = append(args, optPath(name))
		want.WriteString(optPath(name) + " -> " + filepath.Join(out, name) + "\n")
	}
	for range 2 { // the second build overwrites the first
		r := mustRun(t, args...)
		if r.stdout != want.String() {
			t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want.String())
		}
		checkGenerated(t, out, shipped)
	}
}

// checkGenerated checks that out holds exactly <name>/<name>.{go,ll,ptx,json,so}
// for each name (no temporary files), that each checked-in kind is the
// checked-in file, and that the shared object is an ELF file.
func checkGenerated(t *testing.T, out string, names []string) {
	t.Helper()
	var want []string
	for _, name := range names {
		want = append(want, name, filepath.Join(name, name+".so"))
		if so, err := os.ReadFile(filepath.Join(out, name, name+".so")); err != nil || !bytes.HasPrefix(so, []byte("\x7fELF")) {
			t.Errorf("%s.so is not an ELF shared object (%v)", name, err)
		}
		for _, ext := range []string{".go", ".ll", ".ptx", ".json"} {
			file := filepath.Join(name, name+ext)
			want = append(want, file)
			got, err := os.ReadFile(filepath.Join(out, file))
			if err != nil {
				t.Fatal(err)
			}
			golden, err := os.ReadFile(filepath.Join("../../generated", file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, golden) {
				t.Errorf("%s differs from generated/%s", file, file)
			}
		}
	}
	snap := snapshot(t, out)
	delete(snap, ".")
	var have []string
	for path := range snap {
		have = append(have, path)
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("output directory holds %q, want %q", have, want)
	}
}

func TestBuildFlagOrder(t *testing.T) {
	for _, order := range [][]string{
		{"build", optPath("fiber"), "-o", "$OUT"},
		{"build", "-o", "$OUT", optPath("fiber")},
		{"build", "--o=$OUT", optPath("fiber")},
		{"build", optPath("fiber"), "-o", "$OUT", optPath("dp_sgd")},
		{"build", "-o", "$OUT", "--", optPath("fiber")},
	} {
		out := filepath.Join(t.TempDir(), "gen")
		args := slices.Clone(order)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "$OUT", out)
		}
		mustRun(t, args...)
		names := []string{"fiber"}
		if slices.Contains(order, optPath("dp_sgd")) {
			names = append(names, "dp_sgd")
		}
		checkGenerated(t, out, names)
	}
}

func TestBuildThroughLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "build", "-o", link, optPath("dp_sgd"))
	checkGenerated(t, real, []string{"dp_sgd"})
}

// TestExplainSchedule: explain shows a learning-rate schedule's values
// at a few steps, with the warmup and the cosine's end in them.
func TestExplainSchedule(t *testing.T) {
	r := mustRun(t, "explain", optPath("fiber_cosine"), "--set", "warmup=10", "--set", "steps=1000", "--set", "lr_min=0")
	want := "t=0: 0.0001 t=1: 0.0002 t=10: 0.0009999975 t=100: 0.0009792971 t=1000: 0 t=10000: 0\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("explain output lacks %q:\n%s", want, r.stdout)
	}
}

// TestExplainDerivedDefault: fiber_cosine's lr_min = lr / 100 follows lr
// until it is set itself.
func TestExplainDerivedDefault(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want string
	}{
		{nil, "lr_min     = 1e-05        default 1e-05"},
		{[]string{"--set", "lr=0.01"}, "lr_min     = 0.0001       default 1e-05"},
		{[]string{"--set", "lr=0.01", "--set", "lr_min=0.002"}, "lr_min     = 0.002        default 1e-05"},
	} {
		r := mustRun(t, append([]string{"explain", optPath("fiber_cosine")}, c.sets...)...)
		if !strings.Contains(r.stdout, c.want) {
			t.Errorf("explain %v lacks %q:\n%s", c.sets, c.want, r.stdout)
		}
	}
}

func TestExplainHuman(t *testing.T) {
	r := mustRun(t, "explain", optPath("fiber"), "--set", "lr=0.01")
	for _, want := range []string{
		"optimizer fiber",
		"lr         = 0.01         default 0.001 [0, inf)",
		"host scalars (uniform: computed once per step in float64, passed to the kernel as float32):",
		"= 1 - omega", // a constant host scalar
		"= 1 - beta1 ** (t + 1)                     per step, at sigma_w2 = 1:",
		" t=0: 0.1 t=1: 0.19 t=10: 0.6861894 ", // the bias correction at a few steps
		"kernel (varying: per coordinate, float32): reads g gt r m v theta; writes r gt m v theta lookahead;",
		"a          = (1 - kappa) / (kappa * gamma) = 0.9523809523809524 at t = 0",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\nIR:\n") {
		t.Error("explain without --ir printed the IR")
	}
}

// explainJSON is the part of explain --json the tests read.
type explainJSON struct {
	Optimizer string
	Hypers    []struct {
		Name           string
		Value, Default float64
		Range          string
		Alias          *ir.Alias
	}
	States []struct {
		Name string
		Init float32
	}
	Observe *struct {
		Kind string
		Args []struct {
			Name, Expr string
			Value      float64
		}
	}
	HostScalars []struct {
		Name, Expr string
		PerStep    bool     `json:"per_step"`
		Value      *float32 `json:"value"`
	} `json:"host_scalars"`
	Kernel struct {
		Reads, Writes []string
		Operations    int
	}
	IR          *string
	Attenuation map[string]struct {
		Expr           *string
		Value          *float64
		SpectralRadius *float64 `json:"spectral_radius"`
		Stable         bool
		States         []string
		M              [][]string
		B              []string `json:"b"`
		Used           bool
	}
}

func explainFiber(t *testing.T, extra ...string) (explainJSON, map[string]json.RawMessage) {
	t.Helper()
	r := mustRun(t, append([]string{"explain", "--json", optPath("fiber")}, extra...)...)
	var x explainJSON
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil {
		t.Fatalf("explain --json is not JSON: %v\n%s", err, r.stdout)
	}
	if err := json.Unmarshal([]byte(r.stdout), &keys); err != nil {
		t.Fatal(err)
	}
	return x, keys
}

// TestExplainJSONAttenuation checks the derived attenuation of FiBeR's
// filter against the paper's A(ω) = (2 − ω)/(4 − 3ω) and ρ = √(1 − ω) at
// several settings.
func TestExplainJSONAttenuation(t *testing.T) {
	for _, omega := range []float64{0.05, 0.3, 0.9, 1} {
		x, _ := explainFiber(t, "--set", fmt.Sprintf("omega=%v", omega))
		a, ok := x.Attenuation["gt"]
		switch {
		case !ok:
			t.Fatalf("omega=%v: no attenuation of gt: %v", omega, x.Attenuation)
		case a.Expr == nil || *a.Expr != "(2 - omega) / (4 - 3 * omega)":
			t.Errorf("omega=%v: expr %v", omega, a.Expr)
		case a.Value == nil || math.Abs(*a.Value-(2-omega)/(4-3*omega)) > 1e-15:
			t.Errorf("omega=%v: value %v, want %v", omega, a.Value, (2-omega)/(4-3*omega))
		case a.SpectralRadius == nil || math.Abs(*a.SpectralRadius-math.Sqrt(1-omega)) > 1e-12 || !a.Stable:
			t.Errorf("omega=%v: spectral radius %v stable %v, want %v", omega, a.SpectralRadius, a.Stable, math.Sqrt(1-omega))
		case !slices.Equal(a.States, []string{"gt", "r"}) || !a.Used:
			t.Errorf("omega=%v: states %v used %v", omega, a.States, a.Used)
		case fmt.Sprint(a.M, a.B) != "[[1 - omega 1 - omega] [-omega 1 - omega]] [omega omega]":
			t.Errorf("omega=%v: M, b = %v %v", omega, a.M, a.B)
		}
		if _, ok := x.Attenuation["v"]; ok {
			t.Errorf("v carries the noise non-linearly, but has an attenuation entry")
		}
	}
}

func TestExplainJSONKeys(t *testing.T) {
	_, keys := explainFiber(t)
	for _, k := range []string{"optimizer", "source", "hypers", "states", "observe", "host_scalars", "kernel", "attenuation", "step"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("explain --json lacks key %q", k)
		}
	}
	if _, ok := keys["ir"]; ok {
		t.Error("explain --json without --ir has an ir key")
	}
}

func TestExplainJSONValues(t *testing.T) {
	x, _ := explainFiber(t, "--set", "lr=0.01", "--set", "omega=0.5")
	if x.Optimizer != "fiber" {
		t.Errorf("optimizer %q", x.Optimizer)
	}
	checkHyper(t, x, "lr", 0.01, 1e-3)
	checkHyper(t, x, "omega", 0.5, 0.9)
	checkHyper(t, x, "beta2", 0.999, 0.999)
	var states []string
	for _, s := range x.States {
		states = append(states, s.Name)
		if s.Init != 0 {
			t.Errorf("state %s starts at %g, want 0", s.Name, s.Init)
		}
	}
	if !slices.Equal(states, []string{"gt", "r", "m", "v", "lookahead"}) {
		t.Errorf("states %q", states)
	}
	beta1 := 0.9 // a variable: the host computes 1 - beta1 in float64
	checkScalars(t, x, map[string]float32{"1 - omega": 0.5, "omega": 0.5, "lr": 0.01, "1 - beta1": float32(1 - beta1)})
	k := x.Kernel
	if !slices.Contains(k.Reads, "g") || !slices.Contains(k.Reads, "theta") || !slices.Contains(k.Writes, "theta") {
		t.Errorf("kernel reads %q, writes %q; want g and theta read, theta written", k.Reads, k.Writes)
	}
	if k.Operations <= 0 {
		t.Errorf("kernel has %d operations", k.Operations)
	}
}

func checkHyper(t *testing.T, x explainJSON, name string, value, def float64) {
	t.Helper()
	for _, h := range x.Hypers {
		if h.Name == name {
			if h.Value != value || h.Default != def {
				t.Errorf("hyper %s: value %g default %g, want %g and %g", name, h.Value, h.Default, value, def)
			}
			return
		}
	}
	t.Errorf("no hyper %s", name)
}

// checkScalars checks that a host scalar has a value exactly when it does
// not depend on the step, that the bias corrections are per step, and the
// values of the constant scalars in want (by expression).
func checkScalars(t *testing.T, x explainJSON, want map[string]float32) {
	t.Helper()
	perStep := 0
	for _, s := range x.HostScalars {
		if s.PerStep != (s.Value == nil) {
			t.Errorf("host scalar %s = %s: per_step %v but value %v", s.Name, s.Expr, s.PerStep, s.Value)
		}
		if strings.Contains(s.Expr, "** (t + 1)") != s.PerStep && !strings.Contains(s.Expr, "sigma_w2") {
			t.Errorf("host scalar %s = %s: per_step %v", s.Name, s.Expr, s.PerStep)
		}
		if s.PerStep {
			perStep++
		}
		if w, ok := want[s.Expr]; ok {
			if s.Value == nil || *s.Value != w {
				t.Errorf("host scalar %s = %s: value %v, want %v", s.Name, s.Expr, s.Value, w)
			}
			delete(want, s.Expr)
		}
	}
	if perStep < 2 {
		t.Errorf("%d per-step host scalars, want at least the two bias corrections", perStep)
	}
	for expr := range want {
		t.Errorf("no host scalar %s", expr)
	}
}

func TestExplainJSONObserve(t *testing.T) {
	for _, c := range []struct {
		sets         []string
		kappa, gamma float64
	}{
		{nil, 0.6, 0.7},
		{[]string{"--set", "kappa=0.5", "--set", "gamma=1.5"}, 0.5, 1.5}, // a = 2/3
	} {
		x, _ := explainFiber(t, c.sets...)
		o := x.Observe
		if o == nil || o.Kind != "two_point" || len(o.Args) != 2 {
			t.Fatalf("observe %+v, want two_point(a, lookahead)", o)
		}
		a := (1 - c.kappa) / (c.kappa * c.gamma)
		if o.Args[0].Name != "a" || math.Abs(o.Args[0].Value-a) > 1e-15*a {
			t.Errorf("observe arg %+v, want a = %v", o.Args[0], a)
		}
		if o.Args[1].Name != "lookahead" || o.Args[1].Value != c.gamma {
			t.Errorf("observe arg %+v, want lookahead = %v", o.Args[1], c.gamma)
		}
	}
	x, _ := explainFiber(t)
	if a := x.Observe.Args[0].Value; math.Abs(a-20.0/21) > 1e-15 || math.Abs(a-0.952380952) > 1e-9 {
		t.Errorf("a = %v at the defaults, want (1-0.6)/(0.6*0.7) = 20/21 = 0.952380952...", a)
	}
}

// TestExplainAliases: explain shows each hyper's alias (torch's name, which
// the binding accepts) in the text, after the range as the DSL writes it,
// and in --json as the manifest records it; a hyper without one shows none.
func TestExplainAliases(t *testing.T) {
	r := mustRun(t, "explain", optPath("dp_adamw"))
	for _, want := range []string{
		"beta1      = 0.9          default 0.9 [0, 1) alias betas[0]\n",
		"beta2      = 0.999        default 0.999 [0, 1) alias betas[1]\n",
		"wd         = 0            default 0 [0, inf) alias weight_decay\n",
		"lr         = 0.001        default 0.001 [0, inf)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain output lacks %q:\n%s", want, r.stdout)
		}
	}
	x, _ := explainFiber(t)
	zero, one := 0, 1
	want := map[string]*ir.Alias{
		"lr": nil, "beta1": {Name: "betas", Index: &zero}, "beta2": {Name: "betas", Index: &one},
		"eps": nil, "wd": {Name: "weight_decay"}, "kappa": nil, "gamma": nil, "omega": nil, "eps_v": nil,
	}
	got := map[string]*ir.Alias{}
	for _, h := range x.Hypers {
		got[h.Name] = h.Alias
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("explain --json's aliases (-want +got):\n%s", d)
	}
}

func TestExplainJSONIR(t *testing.T) {
	x, _ := explainFiber(t, "--ir")
	src, err := os.ReadFile(optPath("fiber"))
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.Compile(optPath("fiber"), src)
	if len(errs) > 0 || err != nil {
		t.Fatal(errs, err)
	}
	fn := u.Func
	if x.IR == nil || *x.IR != fn.String() {
		t.Errorf("--ir gives %v, want the IR dump:\n%s", x.IR, fn.String())
	}
}

// runInputs writes theta [n] and grads [T, n] to a new directory and
// returns their paths and the output path.
func runInputs(t *testing.T, theta []float32, grads []float32, steps int) (thetaPath, gradsPath, outPath string) {
	t.Helper()
	dir := t.TempDir()
	thetaPath = writeNPY(t, dir, "theta.npy", []int{len(theta)}, theta)
	gradsPath = writeNPY(t, dir, "grads.npy", []int{steps, len(theta)}, grads)
	return thetaPath, gradsPath, filepath.Join(dir, "out.npy")
}

// runOut runs an optimizer with flags and returns the output array, which
// must have theta's shape.
func runOut(t *testing.T, name string, theta, grads []float32, steps int, flags ...string) []float32 {
	t.Helper()
	th, g, out := runInputs(t, theta, grads, steps)
	args := append([]string{"run", optPath(name), "--grads", g, "--theta", th, "--out", out}, flags...)
	r := mustRunNoNoise(t, args...)
	if r.stdout != "" {
		t.Errorf("run printed %q", r.stdout)
	}
	a := readNPY(t, out)
	if !slices.Equal(a.Shape, []int{len(theta)}) {
		t.Fatalf("output shape %v, want [%d]", a.Shape, len(theta))
	}
	return a.Data
}

func TestRunShipped(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const steps, n = 5, 7
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	for _, name := range shipped {
		got := runOut(t, name, theta, grads, steps, "--noise", "off")
		for i, v := range got {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v == theta[i] {
				t.Errorf("%s: theta[%d] went from %v to %v", name, i, theta[i], v)
			}
		}
	}
}

func TestRunDPSGDZeroGradients(t *testing.T) {
	const steps, n = 4, 5
	got := runOut(t, "dp_sgd", make([]float32, n), make([]float32, steps*n), steps, "--noise", "off")
	for i, v := range got {
		if math.Float32bits(v) != 0 {
			t.Errorf("theta[%d] = %v, want +0", i, v)
		}
	}
}

// sgdSteps is dp_sgd in float32, one rounding per operation.
func sgdSteps(theta []float32, g []float32, lr float64, steps int) []float32 {
	lr32 := float32(lr)
	out := slices.Clone(theta)
	for range steps {
		for i := range out {
			out[i] = out[i] - float32(lr32*g[i])
		}
	}
	return out
}

func TestRunDPSGDConstantGradients(t *testing.T) {
	const steps = 6
	g := []float32{0.3, -1.7, 1e-3, 3, 0, -2.5e-6}
	n := len(g)
	grads := slices.Repeat(g, steps)
	for _, c := range []struct {
		lr    float64
		flags []string
	}{
		{0.1, nil},
		{0.5, []string{"--set", "lr=0.5"}},
		{0.37, []string{"--set=lr=0.37"}},
	} {
		got := runOut(t, "dp_sgd", make([]float32, n), grads, steps, append(c.flags, "--noise", "off")...)
		want := sgdSteps(make([]float32, n), g, c.lr, steps)
		if d := floatbits.Diff(want, got); d != "" {
			t.Errorf("lr %v: theta %s (want: -lr*T*g in float32, step by step)", c.lr, d)
		}
	}
}

func TestRunSetChangesResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const steps, n = 3, 4
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	for _, name := range shipped {
		a := runOut(t, name, theta, grads, steps, "--noise", "off")
		b := runOut(t, name, theta, grads, steps, "--noise", "off", "--set", "lr=0.5")
		if slices.Equal(a, b) {
			t.Errorf("%s: --set lr=0.5 did not change the result", name)
		}
	}
}

func TestRunSigmaW2(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const steps, n = 3, 4
	theta, grads := randFloats(rng, n), randFloats(rng, steps*n)
	for _, c := range []struct {
		name    string
		changes bool // whether sigma_w2 enters the update
	}{{"fiber", true}, {"dp_adamw", false}, {"dp_sgd", false}} {
		a := runOut(t, c.name, theta, grads, steps, "--noise", "off")
		b := runOut(t, c.name, theta, grads, steps, "--noise", "off", "--sigma-w2", "0.5", "--seed", "42")
		if slices.Equal(a, b) == c.changes {
			t.Errorf("%s: --sigma-w2 0.5 changed the result: %v, want %v", c.name, !slices.Equal(a, b), c.changes)
		}
	}
}

func TestRunNoSteps(t *testing.T) {
	theta := []float32{1, -2, math.MaxFloat32, 3.5}
	for _, name := range shipped {
		got := runOut(t, name, theta, nil, 0, "--noise", "off")
		if !slices.Equal(got, theta) {
			t.Errorf("%s with T = 0 changed theta to %v", name, got)
		}
	}
}

func TestRunNoCoordinates(t *testing.T) {
	for _, steps := range []int{0, 3} {
		for _, name := range shipped {
			if got := runOut(t, name, []float32{}, nil, steps, "--noise", "off"); len(got) != 0 {
				t.Errorf("%s with n = 0 gave %v", name, got)
			}
		}
	}
}

// TestRunOutThroughLink: --out through a symbolic link writes the file it
// names and leaves the link a link, and nothing else in the directory.
func TestRunOutThroughLink(t *testing.T) {
	theta := []float32{1, 2, 3}
	g := []float32{0.5, -0.5, 4}
	dir := t.TempDir()
	th := writeNPY(t, dir, "theta.npy", []int{3}, theta)
	gr := writeNPY(t, dir, "grads.npy", []int{2, 3}, slices.Repeat(g, 2))
	if err := os.Symlink("result.npy", filepath.Join(dir, "link.npy")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "run", optPath("dp_sgd"), "--grads", gr, "--theta", th, "--out", filepath.Join(dir, "link.npy"), "--noise", "off")
	got := readNPY(t, filepath.Join(dir, "result.npy")).Data
	if want := sgdSteps(theta, g, 0.1, 2); !slices.Equal(got, want) {
		t.Errorf("--out through a link gave %v, want %v", got, want)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.npy")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("directory holds %d entries after the run, want theta, grads, the link and its target", len(entries))
	}
}

// TestRunAllowExtrapolation runs fiber with a = 1.67 (gamma = 0.4), which
// run refuses without the opt-in (bad_input_test.go), and checks that the
// opt-in changes nothing else: gamma shapes only the observation and the
// look-ahead point, so theta matches the run at the default gamma; the run
// says, in one warning line, that a extrapolates.
func TestRunAllowExtrapolation(t *testing.T) {
	theta, grads := []float32{1, -2, 3}, []float32{0.5, 0.25, -1, 0.1, 0.2, 0.3}
	want := runOut(t, "fiber", theta, grads, 2, "--noise", "off")
	th, g, out := runInputs(t, theta, grads, 2)
	r := runMain("run", optPath("fiber"), "--grads", g, "--theta", th, "--out", out, "--noise", "off", "--set", "gamma=0.4", "--allow-extrapolation")
	warning := regexp.MustCompile(`^fibergen run: warning: observe two_point: a = .* = 1.66667 at kappa=0.6, gamma=0.4, step 0, is outside \[0, 1\]: .*: opted in with --allow-extrapolation\n$`)
	if r.code != 0 || r.stdout != "" || !warning.MatchString(r.stderr) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and the warning", r.code, r.stdout, r.stderr)
	}
	if got := readNPY(t, out).Data; !slices.Equal(got, want) {
		t.Errorf("theta %v with --allow-extrapolation, want %v", got, want)
	}
}

func TestRunFlagOrder(t *testing.T) {
	theta := []float32{1, 2}
	g := []float32{1, 1}
	th, gr, out := runInputs(t, theta, g, 1)
	want := sgdSteps(theta, g, 0.25, 1)
	for _, args := range [][]string{
		{"run", "--set", "lr=0.25", "--grads", gr, optPath("dp_sgd"), "--theta", th, "--out", out, "--noise", "off"},
		{"run", "--out=" + out, "--theta=" + th, "--grads=" + gr, "-set=lr=0.25", "--noise=off", optPath("dp_sgd")},
		{"run", "--grads", gr, "--theta", th, "--out", out, "--set", "lr=0.25", "--noise", "off", "--", optPath("dp_sgd")},
	} {
		os.Remove(out)
		mustRun(t, args...)
		if got := readNPY(t, out).Data; !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", args, got, want)
		}
	}
}

// TestExplainJSONErrors checks that explain --json answers a file that does
// not compile in JSON on stdout, one "file:line:col: message" per error, and
// with the diagnostics on stderr as check prints them.
func TestExplainJSONErrors(t *testing.T) {
	r := runMain("explain", "--json", brokenDSL)
	var got struct{ Errors []string }
	want := runMain("check", brokenDSL)
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 1 || r.stderr != want.stderr {
		t.Fatalf("explain --json %s: code %d, stdout %q (%v), stderr %q; want 1, JSON, check's diagnostics", brokenDSL, r.code, r.stdout, err, r.stderr)
	}
	for _, e := range got.Errors {
		if !strings.HasPrefix(e, brokenDSL+":") || !strings.Contains(want.stderr, e+"\n") {
			t.Errorf("error %q is not one of check's:\n%s", e, want.stderr)
		}
	}
	if len(got.Errors) < 2 {
		t.Errorf("%d errors, want every error of %s", len(got.Errors), brokenDSL)
	}
}
