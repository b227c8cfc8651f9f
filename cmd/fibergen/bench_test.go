package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// runBench calls cmdBench with args and captures its output.
func runBench(args ...string) result {
	var out, errb bytes.Buffer
	code := cmdBench(args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// benchLines matches the human output of bench on the cpu or go backend,
// measured against the STREAM kernels.
var benchLines = regexp.MustCompile(`^(\w+)  n=(\d+)  backend=(cpu|go)  threads=(\d+)(?:  kernel=\w+)?  steps=(\d+)
(?:  isa    [^\n]+\n)?  step   ([0-9.]+) ms  \((\d+) bytes/coordinate, ([0-9.]+ (?:bytes|kB|MB|GB))\)  ([0-9.]+) GB/s
  copy   ([0-9.]+) GB/s  \(STREAM copy of ([0-9.]+ (?:bytes|kB|MB|GB)), (fibergen_stream_copy\w*), (\d+) threads?\)
  triad  ([0-9.]+) GB/s  \(STREAM triad of ([0-9.]+ (?:bytes|kB|MB|GB)), (fibergen_stream_triad\w*), (\d+) threads?\)
  ratio  ([0-9.]+) of the better baseline's bandwidth
  bytes/coordinate = 4 × \((\d+) buffers? read \+ (\d+) written\); medians of (\d+) runs of each, interleaved
$`)

// benchKernel matches the host function the cpu backend ran.
var benchKernel = regexp.MustCompile(`  kernel=(\w+)  `)

// bestHostKernel is the host step function of the optimizer name in the
// best variant this CPU runs.
func bestHostKernel(t *testing.T, name string) string {
	isas, err := hostkernel.ISAs()
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := manifest.Read(filepath.Join("..", "..", "generated", name, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := hostisa.ByName(isas[0])
	return m.Kernels.HostFunction + v.Suffix
}

// TestBenchHuman benchmarks two shipped optimizers on both host backends
// at a small n and checks every line of the output.
func TestBenchHuman(t *testing.T) {
	for _, c := range []struct {
		name          string
		read, written int
	}{{"dp_sgd", 2, 1}, {"fiber", 6, 6}} { // fiber writes the look-ahead point too
		for _, backend := range []string{"cpu", "go"} {
			r := runBench(optPath(c.name), "--n", "4096", "--steps", "2", "--backend", backend, "--threads", "2")
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("%s/%s: exit %d, stderr %q", c.name, backend, r.code, r.stderr)
			}
			m := benchLines.FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("%s/%s: output does not match:\n%s", c.name, backend, r.stdout)
			}
			perCoord := 4 * (c.read + c.written)
			suffix := strings.TrimPrefix(bestHostKernel(t, "dp_sgd"), "dp_sgd_cpu")
			want := map[int]string{1: c.name, 2: "4096", 3: backend, 4: "2", 5: "2", 7: strconv.Itoa(perCoord),
				// The step runs 4096 coordinates on one goroutine, and so do the copy and the triad.
				8: formatBytes(int64(perCoord * 4096)), 11: formatBytes(int64(perCoord * 4096)), 12: "fibergen_stream_copy" + suffix,
				13: "1", 16: "fibergen_stream_triad" + suffix, 17: "1", 19: strconv.Itoa(c.read), 20: strconv.Itoa(c.written), 21: "2"}
			for i, w := range want {
				if m[i] != w {
					t.Errorf("%s/%s: field %d is %q, want %q in\n%s", c.name, backend, i, m[i], w, r.stdout)
				}
			}
			if kernel := benchKernel.FindStringSubmatch(r.stdout); (kernel != nil) != (backend == "cpu") || kernel != nil && kernel[1] != bestHostKernel(t, c.name) {
				t.Errorf("%s/%s: the kernel line %q, want %q on the cpu backend only", c.name, backend, kernel, bestHostKernel(t, c.name))
			}
			ms, gbps, copyGBps, triadGBps, ratio := atof(t, m[6]), atof(t, m[9]), atof(t, m[10]), atof(t, m[14]), atof(t, m[18])
			if !(ms > 0 && gbps > 0 && copyGBps > 0 && triadGBps > 0 && ratio > 0) {
				t.Errorf("%s/%s: a measurement is not positive:\n%s", c.name, backend, r.stdout)
			}
			if best := max(copyGBps, triadGBps); math.Abs(ratio-gbps/best) > 0.02*ratio { // three significant digits each
				t.Errorf("%s/%s: ratio %v, but %v / %v GB/s:\n%s", c.name, backend, ratio, gbps, best, r.stdout)
			}
		}
	}
}

// TestBenchWithoutLLVM: where the STREAM kernels cannot be built, bench
// says so and measures against Go's copy, which it names.
func TestBenchWithoutLLVM(t *testing.T) {
	defer func(f func() (string, error)) { streamObject = f }(streamObject)
	streamObject = func() (string, error) { return "", errors.New("no llc-14") }
	r := runBench(optPath("dp_sgd"), "--n", "4096", "--steps", "2", "--backend", "go")
	want := regexp.MustCompile(`\n  copy   [0-9.]+ GB/s  \(Go's parallel copy of 49.2 kB, 1 thread: the STREAM kernels need LLVM: no llc-14\)\n  ratio  [0-9.]+ of copy bandwidth\n`)
	if r.code != 0 || !want.MatchString(r.stdout) {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant it to match %s", r.code, r.stderr, r.stdout, want)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestBenchManyThreads: more threads than a small n gives work to are
// not used by the step, nor by the copy it is measured against (once 94
// copy threads against a one-goroutine step gave a ratio of 12.6).
func TestBenchManyThreads(t *testing.T) {
	for _, c := range []struct {
		n, copyThreads string
	}{{"1000", "1"}, {"20000", "1"}, {"265760", "5"}} { // 265760 = 4 × 2^16 + 3616: five ranges of the host kernel
		r := runBench(optPath("dp_sgd"), "--n", c.n, "--steps", "1", "--threads", "1000")
		m := benchLines.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil {
			t.Fatalf("n=%s: exit %d, stderr %q, stdout:\n%s", c.n, r.code, r.stderr, r.stdout)
		}
		if m[13] != c.copyThreads || m[17] != c.copyThreads {
			t.Errorf("n=%s --threads 1000: the copy ran on %s threads, the triad on %s, want %s (as the step)", c.n, m[13], m[17], c.copyThreads)
		}
	}
}

// TestBenchJSON checks the keys and values of --json, flags given before
// and after the file.
func TestBenchJSON(t *testing.T) {
	r := runBench("--json", "--backend", "go", optPath("fiber"), "--n", "4K", "--steps", "3", "--threads", "1")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	for k, want := range map[string]any{
		"optimizer": "fiber", "n": 4096.0, "backend": "go", "threads": 1.0, "steps": 3.0,
		"buffers_read": 6.0, "buffers_written": 6.0, "bytes_per_coordinate": 48.0, // the look-ahead point is written, never read
		"bytes_per_step": 48.0 * 4096, "statistic": "median",
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	num := map[string]float64{}
	for _, k := range []string{"ms_per_step", "gbps", "copy_bytes", "copy_ms", "copy_gbps", "triad_bytes", "triad_ms", "triad_gbps", "baseline_gbps", "ratio"} {
		x, ok := got[k].(float64)
		if !ok || !(x > 0) || math.IsInf(x, 0) {
			t.Errorf("%s = %v, want a positive number", k, got[k])
		}
		num[k] = x
	}
	if b := max(num["copy_gbps"], num["triad_gbps"]); b != num["baseline_gbps"] {
		t.Errorf("baseline_gbps %v, want the better of copy_gbps and triad_gbps, %v", num["baseline_gbps"], b)
	}
	if r := num["gbps"] / num["baseline_gbps"]; math.Abs(r-num["ratio"]) > 1e-9*r {
		t.Errorf("ratio %v, gbps / baseline_gbps %v", num["ratio"], r)
	}
	if got["baseline"] != "stream" || len(got["baseline_kernels"].([]any)) != 2 {
		t.Errorf("baseline %v, kernels %v; want stream and its two kernels", got["baseline"], got["baseline_kernels"])
	}
	if g := 48 * 4096 / (num["ms_per_step"] * 1e-3) / 1e9; math.Abs(g-num["gbps"]) > 1e-9*g {
		t.Errorf("gbps %v, bytes_per_step / ms_per_step %v", num["gbps"], g)
	}
	if c, tr := num["copy_bytes"], num["triad_bytes"]; c != 48*4096 || tr != 48*4096 {
		t.Errorf("copy_bytes %v, triad_bytes %v, want the step's %d", c, tr, 48*4096)
	}
	if _, ok := got["device"]; ok {
		t.Error("device is set for the go backend")
	}
}

// TestBenchTensors: --tensors lays the parameters out as tensors of those
// sizes, sets n, and says so; lamb's reduction pass then runs a tensor at
// a time, one of them off the Philox groups.
func TestBenchTensors(t *testing.T) {
	r := runBench("--json", "--backend", "go", optPath("lamb"), "--tensors", "1,4095,1000", "--steps", "2", "--threads", "1")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var got struct {
		N       int   `json:"n"`
		Tensors []int `json:"tensors"`
		Passes  int   `json:"passes"`
		Written int   `json:"reduce_buffers_written"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if got.N != 5096 || !slices.Equal(got.Tensors, []int{1, 4095, 1000}) || got.Passes != 2 || got.Written != 1 {
		t.Errorf("n %d, tensors %v, passes %d, reduce_buffers_written %d; want 5096, [1 4095 1000], 2, 1", got.N, got.Tensors, got.Passes, got.Written)
	}
	text := runBench("--backend", "go", optPath("lamb"), "--tensors", "1,4095", "--steps", "1", "--threads", "1")
	if !strings.HasPrefix(text.stdout, "lamb  n=4096  backend=go  tensors=2  ") {
		t.Errorf("head line %q, want it to say tensors=2", strings.SplitN(text.stdout, "\n", 2)[0])
	}
}

// TestBenchUsage checks the usage errors: exit 2, one line, no output.
func TestBenchUsage(t *testing.T) {
	fiber := optPath("fiber")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "want exactly one .dsl file, shipped optimizer name or built directory, got 0"},
		{[]string{fiber, fiber}, "want exactly one .dsl file, shipped optimizer name or built directory, got 2"},
		{[]string{fiber, "--n", "0"}, `--n "0": want an integer from 1 to 2^31`},
		{[]string{fiber, "--n", "-5"}, `--n "-5": want an integer from 1 to 2^31`},
		{[]string{fiber, "--n", "3G"}, `--n "3G": want an integer from 1 to 2^31`},
		{[]string{fiber, "--n", fmt.Sprint(1<<31 + 1)}, "--n \"2147483649\": want an integer from 1 to 2^31"},
		{[]string{fiber, "--n", "lots"}, `--n "lots"`},
		{[]string{fiber, "--n", "M"}, `--n "M"`},
		{[]string{fiber, "--steps", "0"}, `--steps "0": want an integer from 1 to 1000000`},
		{[]string{fiber, "--steps", "2.5"}, `--steps "2.5"`},
		{[]string{fiber, "--threads", "0"}, `--threads "0": want an integer from 1 to 4096`},
		{[]string{fiber, "--backend", "tpu"}, `--backend "tpu": want cpu, go or cuda`},
		{[]string{fiber, "--backend", "cuda", "--threads", "2"}, "--threads applies to the cpu and go backends, not cuda"},
		{[]string{fiber, "--nope"}, "unknown flag --nope"},
		{[]string{fiber, "--tensors", "1,1000", "--n", "5"}, "--tensors: the sizes sum to 1001, --n is 5 (give one of them)"},
		{[]string{fiber, "--tensors", "1,0"}, `--tensors "1,0": want sizes or shapes N[,RxC...], each dimension a whole number > 0`},
		{[]string{fiber, "--tensors", "2147483647,2"}, "--tensors: the sizes sum to 2147483649, more than 2^31"},
	} {
		r := runBench(c.args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("bench %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, r.code, r.stdout, r.stderr, c.msg)
		}
		checkOneLine(t, r.stderr)
	}
}

// TestBenchBadInput checks the input errors: exit 1, no output, a DSL error
// as file:line:col with its source line and caret, every other error one
// line.
func TestBenchBadInput(t *testing.T) {
	r := runBench("testdata/broken.dsl", "--n", "16", "--steps", "1")
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "testdata/broken.dsl:") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	checkDiagnostics(t, r.stderr)

	r = runBench("testdata/no-such.dsl", "--n", "16")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("missing file: exit %d, stdout %q", r.code, r.stdout)
	}
	checkOneLine(t, r.stderr)
}

// TestBenchCUDAUnavailable checks that bench on cuda, where the backend or
// the device is missing, fails with the runtime's error on one line.
func TestBenchCUDAUnavailable(t *testing.T) {
	r := runBench(optPath("dp_sgd"), "--backend", "cuda", "--n", "1024", "--steps", "1")
	if r.code == 0 {
		t.Skip("a CUDA device ran the benchmark")
	}
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "fibergen bench: ") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	checkOneLine(t, r.stderr)
}

func TestBenchFormat(t *testing.T) {
	for x, want := range map[float64]string{12.34: "12.3", 0.05234: "0.0523", 738.19: "738", 1234.5: "1234", 1: "1.00"} {
		if got := sig3(x); got != want {
			t.Errorf("sig3(%v) = %q, want %q", x, got, want)
		}
	}
	for b, want := range map[int64]string{12: "12 bytes", 180224: "180 kB", 738197504: "738 MB", 2952790016: "2.95 GB"} {
		if got := formatBytes(b); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", b, got, want)
		}
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3, 1, 2 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4, 1, 3, 2 = %v", got)
	}
}

// TestBenchDir benchmarks directories that fibergen build wrote: the
// kernels there are timed as they are, a cpu backend without its shared
// object is refused rather than measured on the Go code, and a directory
// without a manifest is named in a one-line error.
func TestBenchDir(t *testing.T) {
	out := t.TempDir()
	if r := runMain("build", "-o", out, optPath("dp_sgd")); r.code != 0 {
		t.Fatalf("build: exit %d, stderr %q", r.code, r.stderr)
	}
	built := filepath.Join(out, "dp_sgd")
	for _, backend := range []string{"cpu", "go"} {
		r := runBench(built, "--backend", backend, "--n", "4K", "--steps", "2", "--json")
		var got map[string]any
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", backend, r.code, r.stdout, r.stderr)
		}
		if got["optimizer"] != "dp_sgd" || got["backend"] != backend || got["bytes_per_coordinate"] != 12.0 {
			t.Errorf("%s: %v", backend, got)
		}
	}
	if err := os.Remove(filepath.Join(built, "dp_sgd.so")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, msg string }{
		{built, "has no dp_sgd.so, so the cpu backend would run the go backend's code"},
		{out, "is not a directory that fibergen build wrote: it has no " + filepath.Base(out) + ".json"},
	} {
		r := runBench(c.dir, "--backend", "cpu", "--n", "4K", "--steps", "1")
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("bench %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.dir, r.code, r.stdout, r.stderr, c.msg)
		}
		checkOneLine(t, r.stderr)
	}
}
