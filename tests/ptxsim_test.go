package tests

import (
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// ptxMutant is a deliberate bug in fiber's checked-in PTX: a rewrite of
// the module's text, which reports whether it found what it rewrites.
type ptxMutant struct {
	name  string
	apply func(ptx string) (string, bool)
}

// ptxMutants are the bugs the simulator's differential tests must catch:
// the edge loop (head and tail of the buffer) one coordinate short or one
// long, two hyperparameters swapped, a state read through the non-coherent
// cache although the kernel writes it, and a wrong lane in the norms'
// butterfly reduction.
var ptxMutants = []ptxMutant{
	{"tail one short", rewrite(`(// %edges\.\d+\n(?:.*\n)*?\tsub\.s64 \t(%rd\d+), .*\n)`, "${1}\tadd.s64 \t$2, $2, -1;\n")},
	{"tail one long", rewrite(`(// %edges\.\d+\n(?:.*\n)*?\tsub\.s64 \t(%rd\d+), .*\n)`, "${1}\tadd.s64 \t$2, $2, 1;\n")},
	{"hypers swapped", swap("[fiber_step_param_8]", "[fiber_step_param_9]")}, // omega and beta1, both 0.9 by default
	{"state read through .nc", rewrite(`(// %group\.8\n(?:.*\n)*?\t)ld\.global\.f32`, "${1}ld.global.nc.f32")},
	{"wrong shuffle lane", rewrite(`(shfl\.sync\.bfly\.b32\t%f\d+, %f\d+, )16,`, "${1}8,")},
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

// swap exchanges every a with b and every b with a.
func swap(a, b string) func(string) (string, bool) {
	return func(ptx string) (string, bool) {
		ok := strings.Contains(ptx, a) && strings.Contains(ptx, b)
		return strings.NewReplacer(a, b, b, a).Replace(ptx), ok
	}
}

// TestPTXSimCatchesMutants shows that the simulated PTX checks can fail:
// each mutant of fiber's PTX fails the step kernel's or the privatize
// kernels' differential check, by a difference from the Go reference, a
// write outside the buffers or a fault of the simulator.
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
			run, _ := simRun(t, cudasim.Config{})
			err := firstFailure(t, run, []byte(ptx), opt)
			if err == nil {
				t.Fatalf("mutant %q passed every check", m.name)
			}
			t.Logf("caught: %v", firstLine(err.Error()))
		})
	}
}

// firstFailure runs the step kernel's and the privatize kernels' checks on
// a few cases of run with the module ptx and returns the first failure.
func firstFailure(t *testing.T, run ptxRun, ptx []byte, opt *optimizer) error {
	fns := loadFunctions(t, run.ctx, ptx, "fiber_step", "fiber_privatize_norms", "fiber_privatize_scales", "fiber_privatize_sum")
	k := &gpuKernel{ctx: run.ctx, fn: fns[0]}
	for i, c := range []kernelCase{{n: 5, skew: 1, offset: 3, noise: true}, {n: 1025}, {n: 4099, skew: 3, offset: 1<<33 + 2, noise: true}} {
		if err := runGPUKernel(t, opt, k, c, 2, gpuShapes[i]); err != nil {
			return err
		}
	}
	p := &gpuPrivatize{ctx: run.ctx, fns: fns[1:]}
	for i, c := range []privCase{{batch: 3, expected: 3, n: 4097, skew: 1, a: 0.3}, {batch: 2, expected: 2, n: 129, a: math.NaN()}} {
		if _, _, err := runGPUPrivatize(t, privRefs["fiber"], p, c, gpuShapes[i]); err != nil {
			return err
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// BenchmarkPTXSim times fiber's step kernel on the simulator over 2^16
// coordinates with noise: coordinates and PTX instructions per second of
// one core (docs/benchmarks.md).
func BenchmarkPTXSim(b *testing.B) {
	run, sim := simRun(b, cudasim.Config{})
	opt := optimizerNamed("fiber")
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
		rg := hostkernel.Range{Hi: n, Seed: 1, Step: uint32(i), Noise: 1}
		if err := k.launch(b, dev, scalars, n, rg, [2]int{256, 0}); err != nil {
			b.Fatal(err)
		}
	}
	st, elapsed := sim.Stats()
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "coords/s")
	b.ReportMetric(float64(st.Instructions)/elapsed.Seconds()/1e6, "Minstr/s")
	b.ReportMetric(float64(st.Instructions)/float64(n*b.N), "instr/coord")
}
