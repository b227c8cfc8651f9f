package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
)

// probeSteps, probeN and probeSigmaW2 shape the probe run of the generated
// code of testdata/dsl.
const (
	probeSteps   = 60
	probeN       = 7
	probeSigmaW2 = 0.3
)

// probeSets are the hypers the probe overrides, through the generated
// Hypers.Set and the interpreter's SetHyper.
var probeSets = map[string][]setting{
	"keywords":     {{"set", 0.25}, {"eps_v", 1e-6}, {"validate", 3}},
	"powers":       {{"floor_v", 1e-5}},
	"gains":        {{"k1", 0.7}, {"k3", 0.2}},
	"nostate":      {{"kappa", 0.25}},
	"under_scores": {{"learning_rate_", 1e-2}, {"init_scale", 0.5}},
	"starts":       {{"lr", 0.25}},
	"blt_probe":    {{"decay", 0.8}, {"mu", 0.3}},
	"varying":      {{"beta", 0.5}, {"warmup", 3}},
	"unguarded":    {{"lr", 0.05}},
	"reduced":      {{"k2", 0.4}},
}

// probe is one generated package in the temporary module.
type probe struct {
	name string
	sets []setting
	want string // the interpreter's theta and states, as the probe prints them
}

// TestGeneratedCodeBuilds generates Go for every testdata/dsl/*.dsl (files
// that stress name mangling, powers and built-ins) into a temporary module,
// runs go vet and go build on it, and runs a probe main that calls New and
// Update and must print the interpreter's bits.
func TestGeneratedCodeBuilds(t *testing.T) {
	t.Parallel() // mostly waits for the go command
	paths, err := filepath.Glob(filepath.Join("testdata", "dsl", "*.dsl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/dsl/*.dsl (err %v)", err)
	}
	dir := t.TempDir()
	writeModule(t, dir)
	theta0, grads := probeInputs()
	var probes []probe
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u, errs, err := pipeline.Compile(path, src)
		if len(errs) > 0 || err != nil {
			t.Errorf("%s: %v %v", path, errs, err)
			continue
		}
		fn := u.Func
		writePackage(t, dir, u)
		sets, ok := probeSets[fn.Name]
		if !ok {
			t.Errorf("%s: add optimizer %s to probeSets", path, fn.Name)
		}
		thetaI := slices.Clone(theta0)
		states, err := runtimeRun(t, fn, sets, thetaI, grads)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		probes = append(probes, probe{name: fn.Name, sets: sets, want: probeLine(fn.Name, append([][]float32{thetaI}, states...))})
	}
	if t.Failed() {
		return
	}
	writeFile(t, filepath.Join(dir, "probe", "main.go"), probeMain(probes, theta0, grads))
	goTool(t, dir, "vet", "./...")
	goTool(t, dir, "build", "./...")
	out := goTool(t, dir, "run", "./probe")
	got := strings.Split(strings.TrimSpace(out), "\n")
	for i, p := range probes {
		if i >= len(got) || got[i] != p.want {
			line := "nothing"
			if i < len(got) {
				line = got[i]
			}
			t.Errorf("%s: the generated code printed\n\t%s\nbut the interpreter computes\n\t%s", p.name, line, p.want)
		}
	}
}

// probeInputs returns θ_0 [probeN] and probeSteps steps of gradients.
func probeInputs() (theta0, grads []float32) {
	r := rand.New(rand.NewPCG(3, 5))
	theta0 = make([]float32, probeN)
	for i := range theta0 {
		theta0[i] = float32(r.NormFloat64())
	}
	grads = make([]float32, probeSteps*probeN)
	for i := range grads {
		grads[i] = float32(r.NormFloat64() * math.Pow(10, float64(i%probeN-3)))
	}
	grads[0] = 0
	return theta0, grads
}

// probeLine formats theta and the states the way the probe prints them.
func probeLine(name string, bufs [][]float32) string {
	var b strings.Builder
	b.WriteString(name)
	for _, buf := range bufs {
		b.WriteString(" |")
		for _, x := range buf {
			fmt.Fprintf(&b, " %08x", math.Float32bits(x))
		}
	}
	return b.String()
}

// probeMain is a main package that runs every probe's generated package on
// the embedded inputs and prints theta and the states (the []float32 fields
// of Optimizer after T and Hypers, in order) like probeLine.
func probeMain(probes []probe, theta0, grads []float32) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"fmt\"\n\t\"math\"\n\t\"reflect\"\n\t\"strings\"\n\n")
	for _, p := range probes {
		fmt.Fprintf(&b, "\t%q\n", "fibergenprobe/"+p.name)
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "const n, steps, sigmaW2 = %d, %d, %s\n\n", probeN, probeSteps, strconv.FormatFloat(probeSigmaW2, 'g', -1, 64))
	fmt.Fprintf(&b, "var theta0 = %s\n\nvar grads = %s\n\n", bitsLiteral(theta0), bitsLiteral(grads))
	b.WriteString(probeHelpers)
	b.WriteString("func main() {\n")
	for _, p := range probes {
		fmt.Fprintf(&b, "\t{\n\t\th := %s.Defaults()\n", p.name)
		for _, s := range p.sets {
			fmt.Fprintf(&b, "\t\tmust(h.Set(%q, %s))\n", s.name, strconv.FormatFloat(s.value, 'g', -1, 64))
		}
		fmt.Fprintf(&b, "\t\to, err := %s.New(h, n)\n\t\tmust(err)\n\t\to.Seed = %d\n\t\ttheta := floats(theta0)\n", p.name, probeSeed)
		b.WriteString("\t\tallowExtrapolation(o) // the probes explore settings past the convexity guard\n")
		b.WriteString("\t\tg := floats(grads)\n\t\tfor t := 0; t < steps; t++ {\n\t\t\tmust(o.Update(theta, g[t*n:(t+1)*n], sigmaW2))\n\t\t}\n")
		fmt.Fprintf(&b, "\t\tfmt.Println(line(%q, theta, o))\n\t}\n", p.name)
	}
	b.WriteString("}\n")
	return b.String()
}

const probeHelpers = `func must(err error) {
	if err != nil {
		panic(err)
	}
}

func floats(bits []uint32) []float32 {
	out := make([]float32, len(bits))
	for i, b := range bits {
		out[i] = math.Float32frombits(b)
	}
	return out
}

func allowExtrapolation(o any) {
	if f := reflect.ValueOf(o).Elem().FieldByName("AllowExtrapolation"); f.IsValid() {
		f.SetBool(true)
	}
}

func line(name string, theta []float32, o any) string {
	var b strings.Builder
	b.WriteString(name)
	bufs := [][]float32{theta}
	v := reflect.ValueOf(o).Elem()
	for i := 0; i < v.NumField(); i++ {
		if !v.Field(i).CanInterface() {
			continue
		}
		if s, ok := v.Field(i).Interface().([]float32); ok {
			bufs = append(bufs, s)
		}
	}
	for _, buf := range bufs {
		b.WriteString(" |")
		for _, x := range buf {
			fmt.Fprintf(&b, " %08x", math.Float32bits(x))
		}
	}
	return b.String()
}

`

// bitsLiteral is a Go []uint32 literal of the bits of xs.
func bitsLiteral(xs []float32) string {
	var b strings.Builder
	b.WriteString("[]uint32{")
	for i, x := range xs {
		if i%8 == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(&b, "%#08x, ", math.Float32bits(x))
	}
	b.WriteString("\n}")
	return b.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeModule writes the go.mod of the temporary module fibergenprobe.
func writeModule(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "go.mod"), "module fibergenprobe\n\ngo 1.26\n")
}

// writePackage writes u's generated package into the module at dir, with
// the manifest it embeds.
func writePackage(t *testing.T, dir string, u *pipeline.Unit) {
	t.Helper()
	name := u.Func.Name
	writeFile(t, filepath.Join(dir, name, name+".go"), string(u.GoCode))
	writeFile(t, filepath.Join(dir, name, name+".json"), string(u.Manifest))
}

// goTool runs the go command in dir, offline, and returns its output.
func goTool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGenerateRejectsNameClashes checks that gogen.Generate reports two DSL
// names that would become the same Go identifier, naming both, instead of
// emitting code that does not compile.
func TestGenerateRejectsNameClashes(t *testing.T) {
	const step = "\nstep {\n\ttheta = theta - %s\n}\n"
	for _, c := range []struct {
		what, decls, update, names string
	}{
		{"hypers eps_v and epsV (both EpsV)", "hyper eps_v = 1\nhyper epsV = 2\n", "eps_v * epsV * g", "eps_v epsV"},
		{"hypers set and set_ (Set is a method of Hypers)", "hyper set = 1\nhyper set_ = 2\n", "set * set_ * g", "set set_"},
		{"states v1 and v_1 (both field V1)", "state v1 = 0\nstate v_1 = 0\n", "v1 * v_1 * g", "v1 v_1"},
		{"states m and m_ (both field M)", "state m = 0\nstate m_ = 0\n", "m * m_ * g", "m m_"},
		{"states hypers and hypers_ (field Hypers is taken)", "state hypers = 0\nstate hypers_ = 0\n", "hypers * hypers_ * g", "hypers hypers_"},
	} {
		src := "optimizer clash\n" + c.decls + fmt.Sprintf(step, c.update)
		for _, st := range stateNames(c.decls) {
			src = strings.Replace(src, "step {\n", "step {\n\t"+st+" = "+st+" + g\n", 1)
		}
		u, err := compile("clash.dsl", []byte(src))
		if err == nil {
			t.Errorf("%s: gogen.Generate succeeded; want an error naming both (first lines of the code: %.200q)", c.what, u.GoCode)
			continue
		}
		for _, name := range strings.Fields(c.names) {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: the error %q does not name %s", c.what, err, name)
			}
		}
	}
}

// stateNames lists the names of the state declarations in decls.
func stateNames(decls string) []string {
	var names []string
	for _, line := range strings.Split(decls, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "state" {
			names = append(names, f[1])
		}
	}
	return names
}

// runtimeRun runs fn through the interpreter as `fibergen run` does, with
// the probe's σ_w², and returns the final states.
func runtimeRun(t *testing.T, fn *ir.Func, sets []setting, theta, grads []float32) ([][]float32, error) {
	e := interpEngine(t, fn, sets)
	e.Noise, e.Seed = true, probeSeed
	return e.Run(theta, grads, probeSigmaW2)
}

// probeSeed keys the noise both the probe and the interpreter draw.
const probeSeed = 7

// TestGeneratedVaryingCheck checks that the generated package refuses the
// step at which a time-varying filter grows, with the runtime's message
// (interp.Program.CheckVarying), and changes nothing: neither theta nor
// its step counter.
func TestGeneratedVaryingCheck(t *testing.T) {
	t.Parallel()
	got, u := runGenerated(t, filepath.Join("testdata", "schedule.dsl"), `h := schedule.Defaults()
	must(h.Set("warmup", 4))
	theta, g := []float32{1, 2, 3}, []float32{0.5, -1, 2}`)
	e := interpEngine(t, u.Func, []setting{{"warmup", 4}})
	prog, h := e.P, e.Hypers
	refused := prog.CheckVarying(h, 3, 0.01)
	if refused == nil || prog.CheckVarying(h, 2, 0.01) != nil {
		t.Fatalf("bad test: the interpreter refuses step 3 with %v, step 2 with %v", refused, prog.CheckVarying(h, 2, 0.01))
	}
	want := fmt.Sprintf("1 false <nil>\n2 false <nil>\n3 false <nil>\n3 true schedule: step 3 refused, nothing changed: %v\n", refused)
	if got != want {
		t.Errorf("the generated package printed\n%s\nwant\n%s", got, want)
	}
}

// TestGeneratedNonFiniteReduction checks that the generated package of an
// optimizer with reductions (testdata/dsl/unguarded.dsl) refuses a step
// whose host value is not finite (a division by the norm of a zero
// gradient), with the runtime's message, and changes nothing.
func TestGeneratedNonFiniteReduction(t *testing.T) {
	t.Parallel()
	got, u := runGenerated(t, filepath.Join("testdata", "dsl", "unguarded.dsl"), `h := unguarded.Defaults()
	theta, g := []float32{1, 2, 3}, []float32{0, 0, 0}`)
	want := "0 true unguarded: step 0: " + fmt.Sprintf(ir.NonFiniteHostFormat(0, ir.ExprString(ir.HostScalars(u.Func.Step)[0])), float32(math.Inf(1))) + "\n"
	if got != want {
		t.Errorf("the generated package printed\n%s\nwant\n%s", got, want)
	}
}

// runGenerated builds the generated package of the DSL file path into a
// temporary module and runs a main that, after setup (which defines h, theta and g), steps
// it without noise up to five times, printing after each its step counter, whether
// theta is unchanged and Update's error, and stopping at the first error.
func runGenerated(t *testing.T, path, setup string) (string, *pipeline.Unit) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.Compile(path, src)
	if len(errs) > 0 || err != nil {
		t.Fatalf("%v %v", errs, err)
	}
	name := u.Func.Name
	dir := t.TempDir()
	writeModule(t, dir)
	writePackage(t, dir, u)
	writeFile(t, filepath.Join(dir, "probe", "main.go"), fmt.Sprintf(`package main

import (
	"fmt"
	"slices"

	"fibergenprobe/%[1]s"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	%[2]s
	o, err := %[1]s.New(h, len(theta))
	must(err)
	o.Noise = false // g is privatized already
	for range 5 {
		before := slices.Clone(theta)
		err := o.Update(theta, g, 0.01)
		fmt.Printf("%%d %%v %%v\n", o.T, slices.Equal(before, theta), err)
		if err != nil {
			return
		}
	}
}
`, name, setup))
	return goTool(t, dir, "run", "./probe"), u
}
