package runtime_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/tests/oracle"
)

// linesSrc is Adafactor's factored second moment with a per-tensor norm
// beside it (docs/dsl.md, "Rows and columns").
const linesSrc = `optimizer lines
hyper lr = 1e-2 in [0, inf)
hyper beta2 = 0.9 in [0, 1)
hyper eps1 = 1e-30 in (0, inf)
state r: rows = 0
state c: cols = eps1
state m = 0
step {
	r = beta2 * r + (1 - beta2) * rowmean(g * g + eps1)
	c = beta2 * c + (1 - beta2) * colmean(g * g + eps1)
	m = 0.5 * m + g / sqrt(r * c / mean(r))
	theta = theta - lr * m / max(1, norm(theta) + norm(g))
}
`

// linesManifest is the manifest of linesSrc, which fibergen build does not
// compile yet: Backend Go needs no kernel.
func linesManifest(t *testing.T) []byte { return linesManifestOf(t, "lines.dsl", linesSrc) }

// linesManifestOf is the manifest, without kernels, of src read from path.
func linesManifestOf(t *testing.T, path, src string) []byte {
	t.Helper()
	u, errs, err := pipeline.Check(path, []byte(src))
	if err != nil || len(errs) > 0 {
		t.Fatal(err, errs)
	}
	m, err := manifest.New(u.Func, path, []byte(src), manifest.Kernels{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// linesTensor is a tensor of the test: its name, shape (nil: Register) and
// rows and columns.
type linesTensor struct {
	name  string
	shape []int
	rows  int
	cols  int
}

var linesTensors = []linesTensor{
	{"w", []int{3, 5}, 3, 5},
	{"bias", nil, 1, 7},
	{"conv", []int{2, 3, 4}, 6, 4},
	{"tall", []int{130, 3}, 130, 3}, // three chunks of 64 rows in the column sums
	{"row", []int{1, 9}, 1, 9},
	{"big", []int{70, 200}, 70, 200},  // three pieces on 3 threads, cut inside rows
	{"wide", []int{2, 4101}, 2, 4101}, // two chunks of 4096 in each row sum
}

// TestLinesGoBackend steps an optimizer with states per row and per
// column on Backend Go, tensors of several shapes with noise drawn in the
// step, on 1 and 3 threads, and holds every tensor's parameters and line
// states to the interpreter's Engine stepping that tensor alone on the
// gradient privatized with the same noise: bit for bit.
func TestLinesGoBackend(t *testing.T) {
	data := linesManifest(t)
	p := programOf(t, data)
	const steps, sigmaW2, seed = 3, 1e-4, 2026
	theta, grads := linesInputs(steps)
	for _, threads := range []int{1, 3} {
		o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go, Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		ts := registerLines(t, o, theta)
		if err := o.SetNoise(runtime.Noise{SigmaW2: sigmaW2, Draw: true}); err != nil {
			t.Fatal(err)
		}
		if err := o.SetSeed(seed); err != nil {
			t.Fatal(err)
		}
		got := stepLines(t, o, ts, grads)
		for i, lt := range linesTensors {
			tn := ts[i]
			want, lines := engineLines(t, p, theta[tn.Offset:tn.Offset+tn.Len], grads, interp.Shape{Rows: lt.rows, Cols: lt.cols}, tn.Offset, sigmaW2, seed)
			if d := floatbits.Diff(want, got[i]); d != "" {
				t.Errorf("%d threads, tensor %s: theta against the Engine: %s", threads, lt.name, d)
			}
			for k, name := range p.Func.LineStateNames() {
				ls, err := tn.State(name)
				if err != nil {
					t.Fatal(err)
				}
				if d := floatbits.Diff(lines[k], ls); d != "" {
					t.Errorf("%d threads, tensor %s: line state %s against the Engine: %s", threads, lt.name, name, d)
				}
			}
		}
	}
}

// programOf is the interpreter of the manifest data.
func programOf(t *testing.T, data []byte) *interp.Program {
	t.Helper()
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := m.Func()
	if err != nil {
		t.Fatal(err)
	}
	p, err := interp.New(fn)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// linesInputs are the parameters of linesTensors, one after another, and
// the gradients of steps steps.
func linesInputs(steps int) (theta []float32, grads [][]float32) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, lt := range linesTensors {
		for range lt.rows * lt.cols {
			theta = append(theta, float32(r.NormFloat64()))
		}
	}
	grads = make([][]float32, steps)
	for s := range grads {
		for range theta {
			grads[s] = append(grads[s], float32(0.1*r.NormFloat64()))
		}
	}
	return theta, grads
}

// registerLines registers linesTensors over theta: with RegisterShaped
// where the tensor has a shape, else with Register.
func registerLines(t *testing.T, o *runtime.Optimizer, theta []float32) []*runtime.Tensor {
	t.Helper()
	var ts []*runtime.Tensor
	off := 0
	for _, lt := range linesTensors {
		vals := theta[off : off+lt.rows*lt.cols]
		off += len(vals)
		var tn *runtime.Tensor
		var err error
		if lt.shape == nil {
			tn, err = o.Register(lt.name, vals)
		} else {
			tn, err = o.RegisterShaped(lt.name, vals, lt.shape...)
		}
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tn)
	}
	return ts
}

// stepLines steps o on grads and returns its tensors' parameters.
func stepLines(t *testing.T, o *runtime.Optimizer, ts []*runtime.Tensor, grads [][]float32) [][]float32 {
	t.Helper()
	for _, g := range grads {
		for _, tn := range ts {
			if err := tn.SetGrad(g[tn.Offset : tn.Offset+tn.Len]); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
	}
	var out [][]float32
	for _, tn := range ts {
		p, err := tn.Params()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// engineLines is the Engine's run of one tensor of shape s at global
// offset off: its parameters and line states after the steps, each
// gradient privatized with the noise the runtime draws there.
func engineLines(t *testing.T, p *interp.Program, theta []float32, grads [][]float32, s interp.Shape, off int, sigmaW2 float64, seed uint64) ([]float32, [][]float32) {
	t.Helper()
	e := interp.Engine{P: p, Hypers: p.Func.DefaultHypers(), Shape: s}
	theta = slices.Clone(theta)
	n := len(theta)
	var all []float32
	for step, g := range grads {
		noisy := make([]float32, n)
		rng.Stream{Mode: rng.Philox, Seed: seed, Step: uint32(step)}.Privatize(noisy, g[off:off+n], rng.SigmaW(sigmaW2), uint64(off))
		all = append(all, noisy...)
	}
	states, err := e.Run(theta, all, sigmaW2)
	if err != nil {
		t.Fatal(err)
	}
	return theta, states[p.NumStates():]
}

// TestLinesCheckpoint saves an optimizer with line states after two steps
// and resumes it in a fresh one: a third step gives both the same bits,
// parameters and line states. A checkpoint of one shape does not load
// into a tensor of another, and says which.
func TestLinesCheckpoint(t *testing.T) {
	data := linesManifest(t)
	theta, grads := linesInputs(3)
	open := func() (*runtime.Optimizer, []*runtime.Tensor) {
		o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		ts := registerLines(t, o, theta)
		if err := o.SetNoise(runtime.Noise{SigmaW2: 1e-4, Draw: true}); err != nil {
			t.Fatal(err)
		}
		return o, ts
	}
	a, ats := open()
	if err := a.SetSeed(7); err != nil {
		t.Fatal(err)
	}
	stepLines(t, a, ats, grads[:2])
	path := t.TempDir() + "/lines.ckpt"
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	b, bts := open()
	if err := b.Load(path); err != nil {
		t.Fatal(err)
	}
	want, got := stepLines(t, a, ats, grads[2:]), stepLines(t, b, bts, grads[2:])
	for i := range want {
		if d := floatbits.Diff(want[i], got[i]); d != "" {
			t.Errorf("tensor %s resumed: %s", ats[i].Name, d)
		}
		for _, name := range []string{"r", "c"} {
			wl, _ := ats[i].State(name)
			gl, err := bts[i].State(name)
			if d := floatbits.Diff(wl, gl); err != nil || d != "" {
				t.Errorf("tensor %s resumed: line state %s: %v %s", ats[i].Name, name, err, d)
			}
		}
	}
	c, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, lt := range linesTensors {
		shape := lt.shape
		switch {
		case lt.name == "w":
			shape = []int{5, 3}
		case shape == nil:
			shape = []int{ats[i].Len}
		}
		if _, err := c.RegisterShaped(lt.name, theta[ats[i].Offset:ats[i].Offset+ats[i].Len], shape...); err != nil {
			t.Fatal(err)
		}
	}
	err = c.Load(path)
	if !errors.Is(err, runtime.ErrCheckpointMismatch) || !strings.Contains(err.Error(), "tensor 0 is w[0:15) of shape [3 5] there, w[0:15) of shape [5 3] here") {
		t.Errorf("a checkpoint of w as 3 × 5 loaded into w of 5 × 3: %v", err)
	}
}

// TestRegisterShapedRefuses: a shape that does not hold the values, has no
// dimension or a negative one is refused, naming the tensor, and registers
// nothing.
func TestRegisterShapedRefuses(t *testing.T) {
	o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: linesManifest(t)}, runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, c := range []struct {
		shape []int
		want  string
	}{
		{[]int{2, 4}, "runtime: register w: a tensor of shape [2 4] holds 8 values, got 6"},
		{nil, "runtime: register w: a shape needs a dimension at least"},
		{[]int{-2, -3}, "runtime: register w: dimension 0 of shape [-2 -3] is negative"},
	} {
		if _, err := o.RegisterShaped("w", make([]float32, 6), c.shape...); err == nil || err.Error() != c.want {
			t.Errorf("shape %v: %v, want %q", c.shape, err, c.want)
		}
	}
	if len(o.Tensors()) != 0 {
		t.Errorf("refused shapes registered %d tensors", len(o.Tensors()))
	}
	if _, err := o.RegisterShaped("w", make([]float32, 6), 1, 2, 3); err != nil {
		t.Error(err)
	}
}

// TestLinesCheckpointHostile: a checkpoint whose line entries do not hold
// their coordinates, or announce more values than its data holds, is
// refused as corrupted before anything is allocated for them, without a
// panic.
func TestLinesCheckpointHostile(t *testing.T) {
	data := linesManifest(t)
	theta, grads := linesInputs(1)
	o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ts := registerLines(t, o, theta)
	if err := o.SetNoise(runtime.Noise{SigmaW2: 1e-4, Draw: true}); err != nil {
		t.Fatal(err)
	}
	stepLines(t, o, ts, grads)
	good := saveBytes(t, o)
	for name, entry := range map[string]map[string]any{
		"cols past the tensor": {"offset": 0, "len": 4, "rows": 4, "cols": int64(1)<<62 + 1},
		"counts that wrap":     {"offset": 0, "len": int64(1) << 62, "rows": int64(1) << 31, "cols": int64(1) << 31},
		"end that wraps":       {"offset": int64(1) << 62, "len": int64(1)<<62 + int64(1)<<61, "rows": 1, "cols": int64(1)<<62 + int64(1)<<61},
		"no rows":              {"offset": 0, "len": 15, "rows": 0, "cols": 15},
	} {
		bad := rewrite(t, good, func(h map[string]any) { h["lines"].([]any)[0] = entry })
		fresh, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		registerLines(t, fresh, theta)
		if err := fresh.LoadFrom(bytes.NewReader(bad)); !errors.Is(err, runtime.ErrCheckpointCorrupted) {
			t.Errorf("%s: %v, want a corrupted checkpoint", name, err)
		}
		fresh.Close()
	}
}

// TestLinesShapeFixed: a tensor's shape is fixed from its first step on;
// a step that is refused makes no line states, which then start at the
// hypers the tensor next steps with.
func TestLinesShapeFixed(t *testing.T) {
	src := "optimizer fixed\nhyper a = 1 in [0, inf)\nstate r: rows = a\nstep {\n\tr = 0.5 * r + 0.5 * a\n\ttheta = theta - (1 / sum(r - a)) * g\n}\n"
	u, errs, err := pipeline.Check("fixed.dsl", []byte(src))
	if err != nil || len(errs) > 0 {
		t.Fatal(err, errs)
	}
	m, err := manifest.New(u.Func, "fixed.dsl", []byte(src), manifest.Kernels{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	tn, err := o.RegisterShaped("w", make([]float32, 6), 2, 3)
	if err == nil {
		err = o.SetNoise(runtime.Noise{SigmaW2: 0.01, Draw: true})
	}
	if err == nil {
		err = tn.SetGrad(make([]float32, 6))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err == nil || !strings.Contains(err.Error(), "+Inf") {
		t.Fatalf("a step dividing by sum(r - a) = 0: %v, want it refused", err)
	}
	if err := o.SetHyper("a", 2); err != nil {
		t.Fatal(err)
	}
	if r, err := tn.State("r"); err != nil || !slices.Equal(r, []float32{2, 2}) {
		t.Errorf("r after a refused step and a = 2: %v %v, want [2 2]", r, err)
	}
	if err := tn.SetShape(3, 2); err != nil {
		t.Errorf("SetShape before any step ran: %v", err)
	}
	if got := tn.Shape(); !slices.Equal(got, []int{3, 2}) {
		t.Errorf("Shape() = %v, want [3 2]", got)
	}
	if err := tn.SetShape(6, 1, 1<<62); err == nil || !strings.Contains(err.Error(), "holds more values than an int counts") {
		t.Errorf("a shape whose product wraps: %v", err)
	}
}

// factoredAdam reads docs/dsl.md's factored Adam ("Rows and columns"),
// checking that the docs show it as it is.
func factoredAdam(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "tests", "testdata", "lines", "factored_adam.dsl"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "dsl.md"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(src[strings.Index(string(src), "optimizer "):])
	if !strings.Contains(string(doc), body) {
		t.Error("docs/dsl.md does not show tests/testdata/lines/factored_adam.dsl as it is")
	}
	return string(src)
}

// TestLinesOracle holds the factored Adam of docs/dsl.md, without noise,
// on Backend go, to the float64 FactoredAdam of tests/oracle over each
// tensor of linesTensors, each with its own rows and columns. The bound
// is float32's, as TestReduceOracles's: each step rounds θ (half an ulp
// of |θ| < 4) and computes an update whose relative error is some dozens
// of roundings (sums over up to 4101 terms, chunked as the docs say); the
// same tensors stepped as one row each, which the bound must tell apart,
// move θ by orders more.
func TestLinesOracle(t *testing.T) {
	const steps = 3
	data := linesManifestOf(t, "factored_adam.dsl", factoredAdam(t))
	theta, grads := linesInputs(steps)
	o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ts := registerLines(t, o, theta)
	if err := o.SetNoise(runtime.Noise{SigmaW2: 0}); err != nil {
		t.Fatal(err)
	}
	if err := o.SetHyper("wd", 0.01); err != nil {
		t.Fatal(err)
	}
	got := slices.Concat(stepLines(t, o, ts, grads)...)
	h := oracle.AdamW{Lr: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-30, Wd: 0.01}
	want, moved := factoredOracle(h, theta, grads, false)
	oneRow, _ := factoredOracle(h, theta, grads, true)
	bound := steps * (0x1p-23*2 + 0x1p-17*moved)
	apart := 0.0
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > bound {
			t.Fatalf("theta[%d] = %v, the float64 oracle's %v (off by %.3g > %.3g)", i, got[i], want[i], d, bound)
		}
		apart = max(apart, math.Abs(oneRow[i]-want[i]))
	}
	if apart < 100*bound {
		t.Errorf("the oracle over one row a tensor is within %.3g of the factored one: the bound %.3g cannot tell them apart", apart, bound)
	}
}

// factoredOracle runs FactoredAdam over each tensor of linesTensors, each
// one row where oneRow; it returns θ and the most any coordinate moved.
func factoredOracle(h oracle.AdamW, theta32 []float32, grads [][]float32, oneRow bool) (theta []float64, moved float64) {
	theta = make([]float64, len(theta32))
	for i, x := range theta32 {
		theta[i] = float64(x)
	}
	off := 0
	for _, lt := range linesTensors {
		n := lt.rows * lt.cols
		rows, cols := lt.rows, lt.cols
		if oneRow {
			rows, cols = 1, n
		}
		o := oracle.NewFactoredAdam(h, rows, cols)
		for _, g := range grads {
			g64 := make([]float64, n)
			for i := range g64 {
				g64[i] = float64(g[off+i])
			}
			o.Step(theta[off:off+n], g64)
		}
		off += n
	}
	for i, x := range theta {
		moved = max(moved, math.Abs(x-float64(theta32[i])))
	}
	return theta, moved
}

// TestLinesTrainerBuffers: on the trainer's buffers, with no tensor
// registered (one row of all the coordinates), the runtime keeps the line
// states, saves them in its checkpoint (which holds none of the buffers)
// and a fresh optimizer on the same buffers resumes them: its next step
// is the first one's next step, bit for bit.
func TestLinesTrainerBuffers(t *testing.T) {
	data := linesManifest(t)
	open := func(bufs [][]float32) *runtime.Optimizer {
		o, err := runtime.OpenCompiled(runtime.Compiled{Manifest: data}, runtime.Options{Backend: runtime.Go, StateDir: t.TempDir()})
		if err == nil {
			err = o.UseBuffers(bufs)
		}
		if err == nil {
			err = o.SetNoise(runtime.Noise{SigmaW2: 1e-4, Draw: true})
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	step := func(o *runtime.Optimizer) {
		if err := o.GradientWritten(); err != nil {
			t.Fatal(err)
		}
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
	}
	bufs := make([][]float32, len(linesManifestBuffers(t, data)))
	for i := range bufs {
		bufs[i] = make([]float32, 6)
	}
	for i := range bufs[ir.GradBuffer] {
		bufs[ir.GradBuffer][i] = 0.1 * float32(i+1)
	}
	a := open(bufs)
	step(a)
	var saved bytes.Buffer
	if err := a.SaveTo(&saved, bufs[ir.FirstState:]...); err != nil {
		t.Fatal(err)
	}
	copies := make([][]float32, len(bufs)) // the trainer's copy of its buffers, saved beside the checkpoint
	for i := range bufs {
		copies[i] = slices.Clone(bufs[i])
	}
	states := slices.Clone(copies[ir.FirstState:])
	for i := range states {
		states[i] = slices.Clone(states[i])
	}
	b := open(copies) // which starts its states
	if err := b.LoadFrom(bytes.NewReader(saved.Bytes()), states...); err != nil {
		t.Fatal(err)
	}
	for i, s := range states { // the trainer restores its states
		copy(copies[ir.FirstState+i], s)
	}
	step(a)
	step(b)
	if d := floatbits.Diff(bufs[ir.ThetaBuffer], copies[ir.ThetaBuffer]); d != "" {
		t.Errorf("the resumed step: %s", d)
	}
}

// linesManifestBuffers are the buffers the manifest data lists.
func linesManifestBuffers(t *testing.T, data []byte) []manifest.Buffer {
	t.Helper()
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return m.Buffers
}
