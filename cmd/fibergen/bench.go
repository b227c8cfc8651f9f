package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"time"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
)

// The limits of bench's flags.
const (
	benchDefaultN = 1 << 24
	benchMaxN     = 1 << 31
	benchMaxSteps = 1000000
	benchMaxThr   = 4096
	// benchMaxCopy caps each buffer of the device-to-device copy baseline:
	// far past any L2 cache, and it keeps the baseline from doubling the
	// device memory a large n needs.
	benchMaxCopy = 1 << 30
)

// benchDP is the privacy setting of the benchmarked steps; the noise is
// drawn in every step, as in training.
var benchDP = runtime.DP{ClipNorm: 1, NoiseMultiplier: 1, BatchSize: 256}

// benchOptions are the flags of fibergen bench.
type benchOptions struct {
	n, steps, threads countFlag
	tensors           sizesFlag // --tensors: the tensors' sizes, summing to n
	backend           string
	noiseMode         modeFlag // --noise-mode: philox or secure
	asJSON            bool
	threadsSet        bool
}

// countFlag is an integer flag in [lo, hi] that takes a binary suffix K, M
// or G (16M is 16·2^20) and says what it wants when the value is not one.
type countFlag struct{ v, lo, hi int64 }

func (c *countFlag) String() string { return strconv.FormatInt(c.v, 10) }

func (c *countFlag) Set(s string) error {
	digits, shift := s, 0
	if i := len(s) - 1; i > 0 {
		switch s[i] {
		case 'k', 'K':
			digits, shift = s[:i], 10
		case 'm', 'M':
			digits, shift = s[:i], 20
		case 'g', 'G':
			digits, shift = s[:i], 30
		}
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v < c.lo || v > c.hi>>shift {
		return fmt.Errorf("want an integer from %d to %s", c.lo, formatCount(c.hi))
	}
	c.v = v << shift
	return nil
}

// formatCount writes a power of two past 2^20 as 2^k, other counts in
// decimal.
func formatCount(x int64) string {
	if x >= 1<<20 && x&(x-1) == 0 {
		return fmt.Sprintf("2^%d", bits.Len64(uint64(x))-1)
	}
	return strconv.FormatInt(x, 10)
}

func cmdBench(args []string, stdout, stderr io.Writer) int {
	o := benchOptions{
		n:       countFlag{benchDefaultN, 1, benchMaxN},
		steps:   countFlag{20, 1, benchMaxSteps},
		threads: countFlag{int64(goruntime.GOMAXPROCS(0)), 1, benchMaxThr},
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Var(&o.n, "n", "coordinates of the benchmarked tensor (K, M, G: times 2^10, 2^20, 2^30)")
	fs.Var(&o.steps, "steps", "timed steps")
	fs.Var(&o.threads, "threads", "cpu and go: goroutines per step and per copy (default GOMAXPROCS)")
	fs.Var(&o.tensors, "tensors", "the parameters as tensors of these sizes or shapes, N[,RxC...], laid end to end as the PyTorch binding lays out a model's (default: one of n-1 and one of 1); they set --n")
	fs.StringVar(&o.backend, "backend", "cpu", "cpu (the host kernel, built with LLVM), go (the reference) or cuda (the PTX kernel)")
	o.noiseMode = philoxMode
	fs.Var(&o.noiseMode, "noise-mode", "the noise's scheme: philox or secure (run bench once in each mode to compare them)")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON")
	var params paramsFlag
	fs.Var(&params, "params", paramsUsage)
	files, ok := parseFlags(fs, args, stderr)
	if !ok {
		return 2
	}
	nSet := false
	fs.Visit(func(f *flag.Flag) { o.threadsSet, nSet = o.threadsSet || f.Name == "threads", nSet || f.Name == "n" })
	if msg := o.sizeTensors(nSet); msg != "" {
		return usageError(stderr, "bench", "%s", msg)
	}
	switch {
	case len(files) != 1:
		return usageError(stderr, "bench", "want exactly one .dsl file, shipped optimizer name or built directory, got %d", len(files))
	case o.backend != "cpu" && o.backend != "go" && o.backend != "cuda":
		return usageError(stderr, "bench", "--backend %q: want cpu, go or cuda", o.backend)
	case o.backend == "cuda" && o.threadsSet:
		return usageError(stderr, "bench", "--threads applies to the cpu and go backends, not cuda")
	}
	var r *benchResult
	var err error
	if fi, statErr := os.Stat(files[0]); statErr == nil && fi.IsDir() {
		if params != (paramsFlag{}) {
			return usageError(stderr, "bench", "--params applies to a source: the kernels of %s store the parameters as they were built", files[0])
		}
		r, err = o.runDir(files[0])
	} else if u := params.compiler(false)(files[0], stderr); u == nil {
		return 1
	} else {
		r, err = o.run(u)
	}
	if err != nil {
		return fail(stderr, "bench", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fail(stderr, "bench", err)
		}
		return 0
	}
	r.print(stdout)
	return 0
}

// sizeTensors sets n from --tensors, or says why it cannot: "" where it
// can, or --tensors was not given.
func (o *benchOptions) sizeTensors(nSet bool) string {
	if o.tensors == nil {
		return ""
	}
	sum := int64(0)
	for _, dims := range o.tensors {
		sum += int64(size(dims))
	}
	switch {
	case nSet && sum != o.n.v:
		return fmt.Sprintf("--tensors: the sizes sum to %d, --n is %d (give one of them)", sum, o.n.v)
	case sum > o.n.hi:
		return fmt.Sprintf("--tensors: the sizes sum to %d, more than %s", sum, formatCount(o.n.hi))
	}
	o.n.v = sum
	return ""
}

// benchResult is what bench measured; its JSON form is the --json output.
// Bytes are counted as the step must move them: every buffer read once,
// every written buffer (read-write or write) written once; GB are 10^9 bytes.
type benchResult struct {
	Optimizer      string `json:"optimizer"`
	N              int    `json:"n"`
	Tensors        []int  `json:"tensors,omitempty"` // --tensors' sizes
	Backend        string `json:"backend"`
	NoiseMode      string `json:"noise_mode"`       // philox or secure (--noise-mode)
	Threads        int    `json:"threads"`          // cpu and go; 0 for cuda
	Kernel         string `json:"kernel,omitempty"` // cpu: the host function that ran, e.g. fiber_cpu_avx512
	Device         string `json:"device,omitempty"`
	Steps          int    `json:"steps"`
	BuffersRead    int    `json:"buffers_read"`
	BuffersWritten int    `json:"buffers_written"`
	// Of those, the states stored as a 16-bit type (docs/dsl.md, "Storage
	// types"), whose values are 2 bytes, not 4.
	Narrow16Read    int `json:"buffers_read_16bit,omitempty"`
	Narrow16Written int `json:"buffers_written_16bit,omitempty"`
	// Passes over memory a step makes: 2 with a reduction pass, which
	// reads ReduceRead buffers before the step and writes ReduceWritten
	// (the privatized g the step then reads in place of g; docs/kernels.md,
	// "Reductions"); the bytes count both passes.
	Passes        int     `json:"passes"`
	ReduceRead    int     `json:"reduce_buffers_read,omitempty"`
	ReduceWritten int     `json:"reduce_buffers_written,omitempty"`
	BytesPerCoord int     `json:"bytes_per_coordinate"`
	BytesPerStep  int64   `json:"bytes_per_step"`
	MsPerStep     float64 `json:"ms_per_step"`
	GBps          float64 `json:"gbps"`
	CopyBytes     int64   `json:"copy_bytes"` // read + written by one copy
	CopyMs        float64 `json:"copy_ms"`
	CopyGBps      float64 `json:"copy_gbps"`
	// The triad (cpu, go: a[i] = b[i] + s·c[i] over as many bytes), and
	// the better of copy and triad, which ratio divides by.
	TriadBytes   int64   `json:"triad_bytes,omitempty"`
	TriadMs      float64 `json:"triad_ms,omitempty"`
	TriadGBps    float64 `json:"triad_gbps,omitempty"`
	BaselineGBps float64 `json:"baseline_gbps"`
	Ratio        float64 `json:"ratio"` // gbps / baseline_gbps
	// Baseline names what the step is measured against: "stream" (cpu,
	// go: the STREAM kernels, BaselineKernels), "go copy" (cpu, go without
	// LLVM: Go's copy, which reads every destination line before writing
	// it, so it is no limit) or "device copy" (cuda).
	Baseline        string   `json:"baseline"`
	BaselineKernels []string `json:"baseline_kernels,omitempty"`
	// Statistic says how the times were taken: "median" (cpu, go: of
	// steps step/copy/triad runs, interleaved) or "mean" (cuda: steps
	// steps back to back, then steps device copies).
	Statistic string `json:"statistic"`
	// HostISA is, on the cpu backend, the variant chosen for this CPU and
	// why each variant was chosen or not.
	HostISA *runtime.ISAChoice `json:"host_isa,omitempty"`

	copyThreads  int    // goroutines of the host copy: Threads, or fewer parts at a small n
	baselineNote string // why the baseline is Go's copy
}

// runDir measures the kernels in a directory that fibergen build wrote
// (generated/<name>/) as they are, so that a GPU host needs no LLVM. The
// cpu backend needs the shared object there: without it the runtime would
// run the Go code, and the numbers would be another backend's.
func (o *benchOptions) runDir(path string) (*benchResult, error) {
	dir := filepath.Clean(path)
	name := filepath.Base(dir)
	if _, err := os.Stat(filepath.Join(dir, name+".json")); err != nil {
		return nil, fmt.Errorf("%s is not a directory that fibergen build wrote: it has no %s.json", path, name)
	}
	if _, err := os.Stat(filepath.Join(dir, name+".so")); err != nil && o.backend == "cpu" {
		return nil, fmt.Errorf("%s has no %s.so, so the cpu backend would run the go backend's code: build it with fibergen build", path, name)
	}
	return o.measure(func(opts runtime.Options) (*runtime.Optimizer, error) { return runtime.Open(dir, opts) })
}

// run builds u's kernels for the backend and measures them.
func (o *benchOptions) run(u *pipeline.Unit) (*benchResult, error) {
	return o.measure(func(opts runtime.Options) (*runtime.Optimizer, error) { return openUnit(u, opts) })
}

// options are the runtime's options for the backend and threads.
func (o *benchOptions) options() runtime.Options {
	// The timed steps reuse one gradient: a benchmark releases nothing.
	opts := runtime.Options{Backend: runtime.Backend(o.backend), AllowGradientReuse: true, SecureNoise: o.noiseMode.secure()}
	if o.backend != "cuda" {
		opts.Threads = int(o.threads.v)
	}
	return opts
}

// measure opens the optimizer with the runtime on the backend and times
// its step against a copy of the same bytes.
func (o *benchOptions) measure(open func(runtime.Options) (*runtime.Optimizer, error)) (*benchResult, error) {
	opts := o.options()
	opt, err := open(opts)
	if err != nil {
		return nil, err
	}
	defer opt.Close()
	r, err := newBenchResult(opt, int(o.n.v), int(o.steps.v))
	if err != nil {
		return nil, err
	}
	r.Backend, r.NoiseMode = o.backend, o.noiseMode.String()
	if o.backend != "cuda" {
		r.Threads = opts.Threads
	}
	for _, dims := range o.tensors {
		r.Tensors = append(r.Tensors, size(dims))
	}
	last, err := setUpBench(opt, r.N, o.tensors)
	if err != nil {
		return nil, err
	}
	if o.backend == "cuda" {
		err = r.timeCUDA(opt, last)
	} else {
		err = r.timeHost(opt)
	}
	if err != nil {
		return nil, err
	}
	if !(r.MsPerStep > 0 && r.CopyMs > 0) {
		return nil, fmt.Errorf("a step timed at %g ms and a copy at %g ms: the clock is too coarse for n = %d", r.MsPerStep, r.CopyMs, r.N)
	}
	r.Backend, r.Kernel, r.HostISA = string(opt.Backend()), opt.HostKernel(), opt.HostISA()
	r.GBps = float64(r.BytesPerStep) / (r.MsPerStep * 1e-3) / 1e9
	r.CopyGBps = float64(r.CopyBytes) / (r.CopyMs * 1e-3) / 1e9
	r.BaselineGBps = r.CopyGBps
	if r.TriadMs > 0 {
		r.TriadGBps = float64(r.TriadBytes) / (r.TriadMs * 1e-3) / 1e9
		r.BaselineGBps = max(r.CopyGBps, r.TriadGBps)
	}
	r.Ratio = r.GBps / r.BaselineGBps
	return r, nil
}

// newBenchResult counts the bytes a step over n coordinates must move from
// the buffers of opt's manifest.
func newBenchResult(opt *runtime.Optimizer, n, steps int) (*benchResult, error) {
	m := opt.Manifest()
	r := &benchResult{Optimizer: m.Optimizer, N: n, Steps: steps}
	size := map[string]int{}
	for _, b := range m.Buffers {
		d, ok := lang.DTypeNamed(b.DType)
		if !ok {
			return nil, fmt.Errorf("manifest of %s: buffer %s has dtype %q (want float32, bfloat16 or float16)", m.Optimizer, b.Name, b.DType)
		}
		size[b.Name] = d.Size()
		read, written := 0, 0
		switch b.Access {
		case "read":
			read = 1
		case "write":
			written = 1
		case "read-write":
			read, written = 1, 1
		default:
			return nil, fmt.Errorf("manifest of %s: buffer %s has access %q (want read, write or read-write)", m.Optimizer, b.Name, b.Access)
		}
		r.BuffersRead, r.BuffersWritten = r.BuffersRead+read, r.BuffersWritten+written
		if d.Narrow() {
			r.Narrow16Read, r.Narrow16Written = r.Narrow16Read+read, r.Narrow16Written+written
		}
		r.BytesPerCoord += d.Size() * (read + written)
	}
	r.Passes = 1
	if red := m.Kernels.Reduce; red != nil {
		r.Passes, r.ReduceRead = 2, len(red.Reads)
		for _, name := range red.Reads {
			r.BytesPerCoord += size[name]
		}
		if slices.Contains(red.Reads, ir.GradName) { // bench draws noise: the pass keeps g
			r.ReduceWritten = 1
			r.BytesPerCoord += 4
		}
	}
	r.BytesPerStep = int64(r.BytesPerCoord) * int64(n)
	return r, nil
}

// setUpBench registers n random parameters, sets the DP settings, the seed
// and random gradients, and takes one untimed step, which also touches
// every buffer. The parameters are tensors of shapes laid end to end, by
// default two, the last coordinate on its own; the last tensor is returned:
// reading its last value back waits for the steps on a device.
func setUpBench(opt *runtime.Optimizer, n int, shapes [][]int) (last *runtime.Tensor, err error) {
	if err := opt.SetDP(benchDP); err != nil {
		return nil, err
	}
	if mode, _ := opt.NoiseMode(); mode != rng.Secure { // a secure key comes from the OS
		if err := opt.SetSeed(1); err != nil {
			return nil, err
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
	}
	names := []string{"w", "last"}
	if shapes == nil {
		shapes = [][]int{{n - 1}, {1}}
	} else {
		names = nil
		for i := range shapes {
			names = append(names, fmt.Sprintf("t%d", i))
		}
	}
	var ts []*runtime.Tensor
	off := 0
	for i, dims := range shapes {
		size := size(dims)
		if size == 0 {
			continue
		}
		t, err := opt.RegisterShaped(names[i], vals[off:off+size], dims...)
		if err != nil {
			return nil, err
		}
		ts, off = append(ts, t), off+size
	}
	last = ts[len(ts)-1]
	for i := range vals {
		vals[i] = float32(0.01 * r.NormFloat64())
	}
	for _, t := range ts {
		if err := t.SetGrad(vals[t.Offset : t.Offset+t.Len]); err != nil {
			return nil, err
		}
	}
	if err := opt.TrustClippedGradient(); err != nil { // made-up clipped means: a benchmark releases nothing
		return nil, err
	}
	vals = nil
	goruntime.GC()
	if err := opt.Step(); err != nil {
		return nil, err
	}
	return last, nil
}

// timeHost times steps steps and as many of each baseline, interleaved,
// over as many threads as the step runs on (fewer than --threads at a
// small n), and keeps the medians: the STREAM kernels where LLVM can build
// them, else Go's copy.
func (r *benchResult) timeHost(opt *runtime.Optimizer) error {
	threads := runtime.StepThreads(r.N, r.Threads, opt.HostKernel() != "")
	so, err := streamObject()
	if err != nil {
		r.baselineNote = fmt.Sprintf("the STREAM kernels need LLVM: %v", err)
		return r.timeGoCopy(opt, threads)
	}
	s, err := runtime.NewHostStream(so, r.BytesPerStep, threads)
	if err != nil {
		return err
	}
	defer s.Close()
	times, err := timeInterleaved(r.Steps, opt.Step, s.Copy, s.Triad)
	if err != nil {
		return err
	}
	r.MsPerStep, r.CopyMs, r.TriadMs = times[0], times[1], times[2]
	r.CopyBytes, r.TriadBytes, r.copyThreads = s.CopyBytes(), s.TriadBytes(), s.Threads()
	c, t := s.Kernels()
	r.Baseline, r.BaselineKernels, r.Statistic = "stream", []string{c, t}, "median"
	return nil
}

// streamObject is pipeline.StreamObject; a variable, so that a test can
// take LLVM away.
var streamObject = pipeline.StreamObject

// timeGoCopy is timeHost against Go's parallel copy.
func (r *benchResult) timeGoCopy(opt *runtime.Optimizer, threads int) error {
	c := runtime.NewHostCopy(r.BytesPerStep, threads) // touches every page once
	times, err := timeInterleaved(r.Steps, opt.Step, func() error { c.Run(); return nil })
	if err != nil {
		return err
	}
	r.MsPerStep, r.CopyMs = times[0], times[1]
	r.CopyBytes, r.copyThreads = c.Moved(), c.Threads()
	r.Baseline, r.Statistic = "go copy", "median"
	return nil
}

// timeInterleaved runs fs one after the other, rounds times, and returns
// the median milliseconds of each.
func timeInterleaved(rounds int, fs ...func() error) ([]float64, error) {
	ms := make([][]float64, len(fs))
	for range rounds {
		for i, f := range fs {
			start := time.Now()
			if err := f(); err != nil {
				return nil, err
			}
			ms[i] = append(ms[i], msSince(start))
		}
	}
	out := make([]float64, len(fs))
	for i := range ms {
		out[i] = median(ms[i])
	}
	return out, nil
}

// timeCUDA times steps steps back to back, waiting for the last by reading
// back the one-coordinate tensor last, then steps device-to-device copies
// of the step's bytes (each buffer capped at benchMaxCopy).
func (r *benchResult) timeCUDA(opt *runtime.Optimizer, last *runtime.Tensor) error {
	if _, err := last.Params(); err != nil {
		return err
	}
	start := time.Now()
	for range r.Steps {
		if err := opt.Step(); err != nil {
			return err
		}
	}
	if _, err := last.Params(); err != nil {
		return err
	}
	r.MsPerStep = msSince(start) / float64(r.Steps)
	half := min((r.BytesPerStep/2+255)&^255, benchMaxCopy)
	gbps, device, err := runtime.DeviceCopyBandwidth(0, int(half), r.Steps)
	if err != nil {
		return err
	}
	r.Device = device
	r.CopyBytes = 2 * half
	r.CopyMs = float64(r.CopyBytes) / (gbps * 1e9) * 1e3
	r.Baseline, r.Statistic = "device copy", "mean"
	return nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// print writes the human form of r.
func (r *benchResult) print(w io.Writer) {
	head := fmt.Sprintf("%s  n=%d  backend=%s", r.Optimizer, r.N, r.Backend)
	if r.Tensors != nil {
		head += fmt.Sprintf("  tensors=%d", len(r.Tensors))
	}
	if r.Backend == "cuda" {
		head += fmt.Sprintf("  device=%q", r.Device)
	} else {
		head += fmt.Sprintf("  threads=%d", r.Threads)
	}
	if r.Kernel != "" {
		head += "  kernel=" + r.Kernel
	}
	if r.NoiseMode == "secure" {
		head += "  noise=secure"
	}
	fmt.Fprintf(w, "%s  steps=%d\n", head, r.Steps)
	if r.HostISA != nil {
		fmt.Fprintf(w, "  isa    %s\n", r.HostISA)
	}
	fmt.Fprintf(w, "  step   %s ms  (%d bytes/coordinate, %s)  %s GB/s\n", sig3(r.MsPerStep), r.BytesPerCoord, formatBytes(r.BytesPerStep), sig3(r.GBps))
	r.printBaseline(w)
	fmt.Fprintf(w, "  bytes/coordinate = 4 × (%d %s read + %d written", r.BuffersRead, plural(r.BuffersRead, "buffer"), r.BuffersWritten)
	if r.Narrow16Read+r.Narrow16Written > 0 {
		fmt.Fprintf(w, ", less 2 for each of the %d reads and %d writes of 16-bit states", r.Narrow16Read, r.Narrow16Written)
	}
	if r.Passes > 1 {
		fmt.Fprintf(w, " + %d read and %d written by the reduction pass: %d passes", r.ReduceRead, r.ReduceWritten, r.Passes)
	}
	fmt.Fprintf(w, ")")
	if r.Statistic == "median" {
		fmt.Fprintf(w, "; medians of %d runs of each, interleaved\n", r.Steps)
	} else {
		fmt.Fprintf(w, "; means of %d steps, then of %d copies\n", r.Steps, r.Steps)
	}
}

// printBaseline writes the baselines of r and the step's share of the
// better one.
func (r *benchResult) printBaseline(w io.Writer) {
	threads := fmt.Sprintf("%d %s", r.copyThreads, plural(r.copyThreads, "thread"))
	switch r.Baseline {
	case "device copy":
		fmt.Fprintf(w, "  copy   %s GB/s  (device-to-device copy of %s)\n", sig3(r.CopyGBps), formatBytes(r.CopyBytes))
		fmt.Fprintf(w, "  ratio  %s of copy bandwidth\n", sig3(r.Ratio))
	case "go copy":
		fmt.Fprintf(w, "  copy   %s GB/s  (Go's parallel copy of %s, %s: %s)\n", sig3(r.CopyGBps), formatBytes(r.CopyBytes), threads, r.baselineNote)
		fmt.Fprintf(w, "  ratio  %s of copy bandwidth\n", sig3(r.Ratio))
	default:
		fmt.Fprintf(w, "  copy   %s GB/s  (STREAM copy of %s, %s, %s)\n", sig3(r.CopyGBps), formatBytes(r.CopyBytes), r.BaselineKernels[0], threads)
		fmt.Fprintf(w, "  triad  %s GB/s  (STREAM triad of %s, %s, %s)\n", sig3(r.TriadGBps), formatBytes(r.TriadBytes), r.BaselineKernels[1], threads)
		fmt.Fprintf(w, "  ratio  %s of the better baseline's bandwidth\n", sig3(r.Ratio))
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// sig3 writes x with three significant digits and no exponent.
func sig3(x float64) string {
	if x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	prec := max(0, 2-int(math.Floor(math.Log10(x))))
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// formatBytes writes a byte count in kB, MB or GB (powers of 10).
func formatBytes(b int64) string {
	x := float64(b)
	for _, u := range []struct {
		unit  string
		scale float64
	}{{"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if x >= u.scale {
			return sig3(x/u.scale) + " " + u.unit
		}
	}
	return strconv.FormatInt(b, 10) + " bytes"
}
