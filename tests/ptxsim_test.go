package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// ptxMutant is a deliberate bug in fiber's checked-in PTX, of the kind a
// code generator makes: a rewrite of the module's text, which reports
// whether it found what it rewrites.
type ptxMutant struct {
	name  string
	apply func(ptx string) (string, bool)
}

// ptxMutants are the bugs the simulator's differential tests must catch, in
// the step kernel, the three privatize kernels and the clamp_mass
// diagnostic; docs/kernels.md lists them with what catches each.
var ptxMutants = []ptxMutant{
	// The step kernel: edges, vector path, grid stride, hypers, states.
	{"step: tail one short", in("fiber_step", rewrite(`(// %edges\.\d+\n(?:.*\n)*?\tsub\.s64 \t(%rd\d+), .*\n)`, "${1}\tadd.s64 \t$2, $2, -1;\n"))},
	{"step: tail one long", in("fiber_step", rewrite(`(// %edges\.\d+\n(?:.*\n)*?\tsub\.s64 \t(%rd\d+), .*\n)`, "${1}\tadd.s64 \t$2, $2, 1;\n"))},
	{"step: two states' stores swapped", in("fiber_step", rewrite(`(st\.global\.v4\.f32 \t\[)(%rd\d+)(\], \{[^}]*\};\n\tst\.global\.v4\.f32 \t\[)(%rd\d+)\]`, "${1}${4}${3}${2}]"))},
	{"step: vector path on 8-byte alignment", in("fiber_step", rewrite(`(// %with_noise\n(?:.*\n)*?\tand\.b64 +\t%rd\d+, %rd\d+, )15;`, "${1}7;"))},
	{"step: grid stride halved", in("fiber_step", withRegs([]string{gridStride}, `(shl\.b64 \t%rd\d+, $0, )4;`, "${1}3;"))},
	{"step: hypers swapped", swap("[fiber_step_param_8]", "[fiber_step_param_9]")}, // omega and beta1, both 0.9 by default
	{"step: scalar off by one", swap("[fiber_step_param_19]", "[fiber_step_param_20]")},
	{"step: state read through .nc", in("fiber_step", rewrite(`(// %group\.8\n(?:.*\n)*?\t)ld\.global\.f32`, "${1}ld.global.nc.f32"))},
	// The step kernel's arithmetic.
	{"step: sub operands swapped", in("fiber_step", rewrite(`(// %without_noise\n(?:.*\n)*?\tsub\.rn\.f32 \t%f\d+, )(%f\d+), (%f\d+);`, "${1}$3, $2;"))},
	{"step: div operands swapped", in("fiber_step", rewrite(`(// %without_noise\n(?:.*\n)*?\tdiv\.rn\.f32 \t%f\d+, )(%f\d+), (%f\d+);`, "${1}$3, $2;"))},
	{"step: multiply dropped", in("fiber_step", rewrite(`(// %without_noise\n(?:.*\n)*?\t)mul\.rn\.f32 \t(%f\d+), (%f\d+), %f\d+;`, "${1}mov.f32 \t$2, $3;"))},
	{"step: max's comparison inverted", in("fiber_step", rewrite(`(// %without_noise\n(?:.*\n)*?\t)setp\.gt\.f32`, "${1}setp.lt.f32"))},
	{"step: NaN test inverted", in("fiber_step", rewrite(`(// %without_noise\n(?:.*\n)*?\t)setp\.nan\.f32`, "${1}setp.num.f32"))},
	{"step: selp operands swapped", in("fiber_step", rewrite(`(// %without_noise\n(?:.*\n)*?\tselp\.f32 \t%f\d+, )(%f\d+), (%f\d+),`, "${1}$3, $2,"))},
	{"step: approximate division", in("fiber_step", rewrite(`div\.rn\.f32`, "div.approx.f32"))},
	{"step: approximate square root", in("fiber_step", rewrite(`sqrt\.rn\.f32`, "sqrt.approx.f32"))},
	// The noise: Philox, its counter and key, Box-Muller.
	{"noise: Philox multiplier", in("fiber_step", rewrite(`3528531795`, "3528531797"))},
	{"noise: Philox key increment", in("fiber_step", rewrite(`2654435769`, "2654435761"))},
	{"noise: wrong key register in a round", in("fiber_step", withRegs([]string{philoxKey1, philoxKey0}, `(xor\.b64 +\t%rd\d+, %rd\d+, )$0;`, "${1}$1;"))},
	{"noise: counter off by one", in("fiber_step", withRegs([]string{philoxGroups}, `(\tadd\.s64 \t(%rd\d+), $0, %rd\d+;\n)`, "${1}\tadd.s64 \t$2, $2, 1;\n"))},
	{"noise: group offset off by one", in("fiber_step", rewrite(`(// %with_noise\n(?:.*\n)*?\tshr\.u64 \t(%rd\d+), %rd\d+, 2;\n)`, "${1}\tadd.s64 \t$2, $2, 1;\n"))},
	{"noise: step ignored", in("fiber_step", rewrite(`ld\.param\.u32 \t(%r\d+), \[fiber_step_param_25\];`, "mov.u32 \t$1, 0;"))},
	{"noise: uniform from a signed integer", in("fiber_step", rewrite(`cvt\.rn\.f32\.u32`, "cvt.rn.f32.s32"))},
	{"noise: uniform's scale one ulp off", in("fiber_step", rewrite(`0f2F800000`, "0f2F800001"))},
	{"noise: ln 2's high part one ulp off", in("fiber_step", rewrite(`(// %with_noise\n(?:.*\n)*?.*)0f3F317180`, "${1}0f3F317181"))},
	// The secure noise: ChaCha20, its key and counter, the grid.
	{"secure: ChaCha constant", in("fiber_step", rewrite(`1634760805`, "1634760807"))},
	{"secure: a rotation by 13, not 12", in("fiber_step", rewrite(`(shf\.l\.wrap\.b32 \t%r\d+, %r\d+, %r\d+, )12;`, "${1}13;"))},
	{"secure: key words swapped", swap("[fiber_step_param_27]", "[fiber_step_param_28]")},
	{"secure: octet counter off by one", in("fiber_step", rewrite(`(\tshr\.u64 \t(%rd\d+), %rd\d+, 3;\n)`, "${1}\tadd.s64 \t$2, $2, 1;\n"))},
	{"secure: grid twice as coarse", in("fiber_step", rewrite(`-67108864;`, "-58720256;"))},
	{"secure: rounding constant one ulp off", in("fiber_step", rewrite(`0f4B400000`, "0f4B400001"))},
	{"secure: ln 2's high part one ulp off", in("fiber_step", rewrite(`(// %with_secure_noise\n(?:.*\n)*?.*)0f3F317180`, "${1}0f3F317181"))},
	// The privatize kernels.
	{"norms: mix weights", in("fiber_privatize_norms", swap("[fiber_privatize_norms_param_5]", "[fiber_privatize_norms_param_6]"))},
	{"norms: tail guard off by one", in("fiber_privatize_norms", rewrite(`setp\.lt\.s64 \t(%p\d+), (%rd\d+), %rd54;\n\tselp\.b64`, "setp.le.s64 \t$1, $2, %rd54;\n\tselp.b64"))},
	{"norms: chunk stride 2048", in("fiber_privatize_norms", rewrite(`(shl\.b64 \t%rd\d+, %rd\d+, )12;`, "${1}11;"))},
	{"norms: row stride 64", in("fiber_privatize_norms", rewrite(`(add\.s64 \t(%rd\d+), %rd\d+, )128;`, "${1}64;"))},
	{"norms: wrong shuffle lane", in("fiber_privatize_norms", rewrite(`(shfl\.sync\.bfly\.b32\t%f\d+, %f\d+, )16,`, "${1}8,"))},
	{"norms: last shuffle lane", in("fiber_privatize_norms", rewrite(`(shfl\.sync\.bfly\.b32\t%f\d+, %f\d+, )1,`, "${1}2,"))},
	{"scales: unrolled loop's stride", in("fiber_privatize_scales", rewrite(`(add\.s64 \t(%rd\d+), %rd\d+, )32;`, "${1}28;"))},
	{"scales: remainder dropped", in("fiber_privatize_scales", rewrite(`(// %chunk\.done\.\d+\.loopexit\.unr-lcssa\n(?:.*\n)*?\t)@%p\d+ bra`, "${1}bra.uni"))},
	{"scales: non-finite test misses +Inf", in("fiber_privatize_scales", rewrite(`setp\.geu\.f64`, "setp.gtu.f64"))},
	{"scales: clip by max, not min", in("fiber_privatize_scales", rewrite(`min\.f64`, "max.f64"))},
	{"scales: zero-norm test inverted", in("fiber_privatize_scales", rewrite(`setp\.eq\.f64`, "setp.ne.f64"))},
	{"sum: multiply by the divisor", in("fiber_privatize_sum", rewrite(`div\.rn\.f32`, "mul.rn.f32"))},
	{"sum: stores of a group swapped", in("fiber_privatize_sum", rewrite(`(st\.global\.f32 \t\[%rd\d+)\+4(\], %f\d+;\n\tst\.global\.f32 \t\[%rd\d+)(\], %f\d+;)`, "${1}${2}+4${3}"))},
	{"sum: unrolled pair's row stride", in("fiber_privatize_sum", rewrite(`(shl\.b64 \t%rd\d+, %rd212, )3;`, "${1}2;"))},
	// The clamp_mass diagnostic.
	{"clamp_mass: indicator inverted", in("fiber_clamp_mass", rewrite(`setp\.eq\.f32( \t%p\d+, %f\d+, %f16;)`, "setp.ne.f32${1}"))},
	{"clamp_mass: abs dropped", in("fiber_clamp_mass", rewrite(`and\.b32 +\t(%r\d+), (%r\d+), 2147483647;`, "mov.b32 \t$1, $2;"))},
	{"clamp_mass: sums stored swapped", in("fiber_clamp_mass", rewrite(`(st\.global\.f32 \t\[)(%rd\d+)(\], %f\d+;\n\tst\.global\.f32 \t\[)(%rd\d+)\]`, "${1}${4}${3}${2}]"))},
	{"clamp_mass: wrong shuffle lane", in("fiber_clamp_mass", rewrite(`(shfl\.sync\.bfly\.b32\t%f\d+, %f1, )16,`, "${1}8,"))},
	{"clamp_mass: chunk stride 2048", in("fiber_clamp_mass", rewrite(`(shl\.b64 \t%rd\d+, %rd\d+, )12;`, "${1}11;"))},
}

// in applies the rewrite f to the kernel entry's text alone.
func in(entry string, f func(string) (string, bool)) func(string) (string, bool) {
	return func(ptx string) (string, bool) {
		start := strings.Index(ptx, ".entry "+entry+"(")
		if start < 0 {
			return "", false
		}
		end := strings.Index(ptx[start:], "// -- End function")
		if end < 0 {
			return "", false
		}
		end += start
		body, ok := f(ptx[start:end])
		return ptx[:start] + body + ptx[end:], ok
	}
}

// rewrite replaces the first match of pattern with replace ($1 … for its
// groups).
func rewrite(pattern, replace string) func(string) (string, bool) {
	re := regexp.MustCompile(pattern)
	return func(ptx string) (string, bool) {
		loc := re.FindStringSubmatchIndex(ptx)
		if loc == nil {
			return "", false
		}
		return ptx[:loc[0]] + string(re.ExpandString(nil, replace, ptx, loc)) + ptx[loc[1]:], true
	}
}

// gridStride's group 1 is the register of the grid's thread count.
const gridStride = `mov\.u32 \t%r\d+, %nctaid\.x;\n\tmul\.wide\.u32 \t(%rd\d+), `

// Patterns whose group 1 is a register of the Philox loops: the first group's
// index, the key's high word after its first bump (k1 + 0xBB67AE85) and
// its low word after two (k0 + 2·0x9E3779B9).
const (
	philoxGroups = `// %with_noise\n(?:.*\n)*?\tshr\.u64 \t(%rd\d+), %rd\d+, 2;`
	philoxKey1   = `// %with_noise\n(?:.*\n)*?\tadd\.s64 \t(%rd\d+), %rd\d+, 3144134277;`
	philoxKey0   = `// %with_noise\n(?:.*\n)*?\tadd\.s64 \t(%rd\d+), %rd\d+, 1013904242;`
)

// withRegs is rewrite with the registers that finds' patterns capture put
// in for $0, $1, ... of pattern and of replace (the registers a code
// generator numbers differently from one build to the next).
func withRegs(finds []string, pattern, replace string) func(string) (string, bool) {
	return func(ptx string) (string, bool) {
		for i, f := range finds {
			m := regexp.MustCompile(f).FindStringSubmatch(ptx)
			if m == nil {
				return "", false
			}
			arg := "$" + strconv.Itoa(i)
			pattern, replace = strings.ReplaceAll(pattern, arg, m[1]), strings.ReplaceAll(replace, arg, m[1])
		}
		return rewrite(pattern, replace)(ptx)
	}
}

// swap exchanges every a with b and every b with a.
func swap(a, b string) func(string) (string, bool) {
	return func(ptx string) (string, bool) {
		ok := strings.Contains(ptx, a) && strings.Contains(ptx, b)
		return strings.NewReplacer(a, b, b, a).Replace(ptx), ok
	}
}

// TestPTXSimCatchesMutants shows that the simulated PTX checks can fail:
// each mutant of fiber's PTX fails the step kernel's, the privatize
// kernels' or clamp_mass's differential check, by a difference from the Go
// reference, a write outside the buffers, a fault of the simulator or a
// module it refuses to load. Every mutant must be caught.
func TestPTXSimCatchesMutants(t *testing.T) {
	src, err := os.ReadFile(repoPath("generated", "fiber", "fiber.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	opt := optimizerNamed("fiber")
	run, _ := simRun(t, cudasim.Config{})
	if err := firstFailure(t, run, src, opt); err != nil {
		t.Fatalf("fiber's PTX itself fails the mutants' checks: %v", err)
	}
	for _, m := range ptxMutants {
		t.Run(m.name, func(t *testing.T) {
			ptx, ok := m.apply(string(src))
			if !ok {
				t.Fatalf("mutant %q finds nothing to rewrite in fiber.ptx: update it", m.name)
			}
			if ptx == string(src) {
				t.Fatalf("mutant %q leaves fiber.ptx as it is: update it", m.name)
			}
			run, _ := simRun(t, cudasim.Config{})
			err := firstFailure(t, run, []byte(ptx), opt)
			if err == nil {
				t.Fatalf("mutant %q passed every check", m.name)
			}
			t.Logf("caught: %v", firstLine(err.Error()))
		})
	}
}

// mutantKernelCases are the step kernel's cases of the mutant test and
// their launch shapes, each for two steps (σ_w² 1, then 1e-4): with and
// without noise, on its aligned (vector) and misaligned paths, at the
// defaults and at distinct hypers, grid-stride loops and a large global
// offset.
var mutantKernelCases = []struct {
	c     kernelCase
	shape [2]int
}{
	{kernelCase{n: 5, skew: 1, offset: 3, noise: rng.Philox}, [2]int{256, 0}},
	{kernelCase{n: 1025}, [2]int{32, 1}},
	{kernelCase{n: 1030, skew: 2, offset: 1}, [2]int{64, 2}},
	{kernelCase{n: 4099, skew: 3, offset: 1<<33 + 2, noise: rng.Philox}, [2]int{128, 3}},
	{kernelCase{n: 4099, skew: 2, offset: 1<<33 + 2, noise: rng.Philox}, [2]int{128, 3}},
	{kernelCase{n: 1029, skew: 1, offset: 1<<33 + 5, noise: rng.Secure}, [2]int{64, 2}},
	{kernelCase{n: 1030, offset: 2, noise: rng.Secure}, [2]int{32, 1}},
	{kernelCase{n: 1030, offset: 2, noise: rng.Secure, raw: true}, [2]int{32, 1}},
}

// mutantPrivCases are the privatize cases of the mutant test: the sharp
// cases and a two-set batch of five, whose sum runs its pair of examples
// twice.
func mutantPrivCases() []privCase {
	return append(privSharpCases(), privCase{batch: 5, expected: 5, n: 129, skew: 1, a: 0.3})
}

// mutantDiagSizes are clamp_mass's sizes of the mutant test: one chunk
// with a tail, and four.
var mutantDiagSizes = []int{5, 3*4096 + 129}

// firstFailure runs the step kernel's, the privatize kernels' and
// clamp_mass's checks on run with the module ptx and returns the first
// failure, a failure to load the module among them.
func firstFailure(t *testing.T, run ptxRun, ptx []byte, opt *optimizer) error {
	fns, err := moduleFunctions(t, run.ctx, ptx, "fiber_step", "fiber_privatize_norms", "fiber_privatize_scales", "fiber_privatize_sum", "fiber_clamp_mass")
	if err != nil {
		return err
	}
	k := &gpuKernel{ctx: run.ctx, fn: fns[0]}
	for _, m := range mutantKernelCases {
		if err := runGPUKernel(t, opt, k, m.c, 2, m.shape); err != nil {
			return fmt.Errorf("step %v: %w", m.c, err)
		}
	}
	p := &gpuPrivatize{ctx: run.ctx, fns: fns[1:4]}
	for i, c := range mutantPrivCases() {
		if _, _, err := runGPUPrivatize(t, optimizerNamed("fiber").pkg.priv, p, c, gpuShapes[i%len(gpuShapes)]); err != nil {
			return fmt.Errorf("privatize %v: %w", c, err)
		}
	}
	d := newDiagTarget(t, "fiber", 3, 1e-8)
	r := rand.New(rand.NewPCG(11, 5))
	for i, n := range mutantDiagSizes {
		if err := runGPUClampMass(t, run.ctx, d, fns[4], r, n, gpuShapes[i]); err != nil {
			return fmt.Errorf("clamp_mass n=%d: %w", n, err)
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// BenchmarkPTXSim times step kernels on the simulator over 2^16
// coordinates with noise in both modes: coordinates and PTX instructions
// per second of one core, and the instructions a coordinate costs — what
// bounds a step on a GPU whose memory outruns its issue rate
// (docs/benchmarks.md). The 16-bit optimizers run on float32-sized
// buffers: their code has no branch on the values, so the count holds.
func BenchmarkPTXSim(b *testing.B) {
	for _, name := range []string{"fiber", "dp_adamw", "dp_adamw_bf16", "dp_sgd", "blt_sgd"} {
		for _, mode := range []rng.Mode{rng.Philox, rng.Secure} {
			b.Run(name+"/"+mode.String(), func(b *testing.B) { benchPTXSim(b, optimizerNamed(name), mode) })
		}
	}
}

func benchPTXSim(b *testing.B, opt *optimizer, mode rng.Mode) {
	run, sim := simRun(b, cudasim.Config{})
	k := loadGPUKernel(b, run.ctx, opt)
	const n = 1 << 16
	_, bufs := kernelBuffers(b, opt, kernelCase{n: n})
	dev := deviceBuffers(b, run.ctx, bufs, 0)
	ref, err := newGoRef(opt.pkg, nil)
	if err != nil {
		b.Fatal(err)
	}
	_, scalars := ref.scalars(0, 1e-4)
	b.ResetTimer()
	for i := range b.N {
		rg := hostkernel.Range{Hi: n, Seed: 1, Step: uint32(i), Noise: uint32(mode)}
		if err := k.launch(b, dev, scalars, n, rg, [2]int{256, 0}); err != nil {
			b.Fatal(err)
		}
	}
	st, elapsed := sim.Stats()
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "coords/s")
	b.ReportMetric(float64(st.Instructions)/elapsed.Seconds()/1e6, "Minstr/s")
	b.ReportMetric(float64(st.Instructions)/float64(n*b.N), "instr/coord")
}
