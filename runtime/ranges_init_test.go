package runtime_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime"
)

// initBase and initRanges are the hypers of TestRangesInitHost and
// TestCUDAInitDeviceStatesRanges: the optimizer's, and each range's size
// and own hypers (testdata's init_ranges reads m0 in its states' initial
// values; lr in none of them).
var (
	initBase   = map[string]float64{"m0": 3}
	initRanges = []struct {
		n   int
		own map[string]float64
	}{
		{5, nil},
		{3, map[string]float64{"m0": -2}},
		{0, map[string]float64{"m0": 7}},
		{6, map[string]float64{"m0": 0.25, "lr": 0.5}},
		{2, map[string]float64{"lr": 0.5}},
	}
)

// initWant is each state of init_ranges (m = m0, v = 2·m0 + 0.5) over the
// ranges, each range's coordinates under its own m0.
func initWant() [][]float32 {
	want := make([][]float32, 2)
	for _, r := range initRanges {
		m0 := initBase["m0"]
		if v, ok := r.own["m0"]; ok {
			m0 = v
		}
		for range r.n {
			want[0] = append(want[0], float32(m0))
			want[1] = append(want[1], float32(2*m0+0.5))
		}
	}
	return want
}

// testdataDir compiles testdata/<name>.dsl into a directory laid out as
// fibergen build lays it out. A GPU host of make gpu-bundle has no LLVM to
// build its PTX: there the bundle's build of it in $FIBERGEN_GENERATED is
// taken, and the test skips without one.
func testdataDir(t *testing.T, name string) string {
	return testdataDirFor(t, name, ir.Storage{})
}

// testdataDirFor is testdataDir with the kernels compiled for parameters
// stored as params (pipeline.CompileFor), in a directory of their own.
func testdataDirFor(t *testing.T, name string, params ir.Storage) string {
	return builtDirFor(t, filepath.Join("testdata", name+".dsl"), params)
}

// builtDirFor builds the optimizer of the .dsl file src for parameters
// stored as params, once per test binary.
func builtDirFor(t *testing.T, src string, params ir.Storage) string {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(src), ".dsl")
	key := name
	if params.Narrow() {
		key = strings.ReplaceAll(params.String(), " ", "_") + "/" + name
	}
	if _, err := llvmgen.FindToolchain(); err != nil && os.Getenv("FIBERGEN_GENERATED") != "" {
		dir := filepath.Join(os.Getenv("FIBERGEN_GENERATED"), key)
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("%s needs LLVM to build, or a build in $FIBERGEN_GENERATED: %v", key, err)
		}
		return dir
	}
	if dir, ok := kernelDirs.Load(key); ok { // built once per test binary, as kernelDir's
		return dir.(string)
	}
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.CompileFor(name+".dsl", text, params)
	if len(errs) > 0 || err != nil {
		t.Fatalf("%s.dsl: %v %v", name, errs, err)
	}
	files, err := u.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(kernelRoot, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kernelDirs.Store(key, dir)
	return dir
}

// openInitRanges opens init_ranges from dir with initRanges registered,
// the optimizer's hypers initBase, and returns their length.
func openInitRanges(t *testing.T, dir string, backend runtime.Backend) (*runtime.Optimizer, int) {
	t.Helper()
	o := openDP(t, dir, runtime.Options{Backend: backend}, testDP)
	n := 0
	for i, r := range initRanges {
		tn, err := o.RegisterRange(string(rune('a'+i)), r.n)
		if err == nil && r.own != nil {
			err = tn.SetHypers(r.own)
		}
		if err != nil {
			t.Fatal(err)
		}
		n += r.n
	}
	if err := o.SetHypers(initBase); err != nil {
		t.Fatal(err)
	}
	return o, n
}

// TestRangesInitHost: UseBuffers starts each range's states at their
// initial values under the range's own hypers, on the host kernel and the
// reference, whatever the trainer's buffers held.
func TestRangesInitHost(t *testing.T) {
	dir := testdataDir(t, "init_ranges")
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
		o, n := openInitRanges(t, dir, backend)
		bufs := make([][]float32, len(o.Manifest().Buffers))
		for i := range bufs {
			bufs[i] = slices.Repeat([]float32{99}, n)
		}
		if err := o.UseBuffers(bufs); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(initWant(), bufs[ir.FirstState:]); d != "" {
			t.Errorf("%s: states after UseBuffers (-want +got)\n%s", backend, d)
		}
	}
}

// TestCUDAInitDeviceStatesRanges: InitDeviceStates starts each range's
// states at their initial values under the range's own hypers, on device
// buffers of the trainer's, poisoned before.
func TestCUDAInitDeviceStatesRanges(t *testing.T) {
	ctx := cudaContext(t)
	o, n := openInitRanges(t, testdataDir(t, "init_ranges"), runtime.CUDA)
	a := newDeviceArena(t, ctx, len(o.Manifest().Buffers), n, 1)
	if err := o.InitDeviceStates(a.bufs, n); err != nil {
		t.Fatal(err)
	}
	var got [][]float32
	for i := ir.FirstState; i < len(a.bufs); i++ {
		got = append(got, a.get(t, i))
	}
	if d := cmp.Diff(initWant(), got); d != "" {
		t.Errorf("states after InitDeviceStates (-want +got)\n%s", d)
	}
}
