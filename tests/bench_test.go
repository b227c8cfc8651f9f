package tests_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime/hostkernel"

	"github.com/fibergen/fibergen/generated/fiber"
	"github.com/fibergen/fibergen/ir/interp"
)

// benchN is the number of coordinates of the step benchmarks: 4 MiB per
// buffer, well past the last-level cache.
const benchN = 1 << 20

// fiberBytes is the memory one FiBeR step touches: it reads theta, g and four
// states and writes theta and the four states.
const fiberBytes = (6 + 5) * 4 * benchN

// BenchmarkFiberStep measures one FiBeR step over benchN coordinates with the
// generated Go reference and with the IR interpreter, after a copy of the
// same number of bytes (half read, half written) as a baseline; each step
// reports its throughput as a fraction of the copy's, measured in the same
// run ("of-memcpy").
func BenchmarkFiberStep(b *testing.B) {
	var copyRate float64
	b.Run("memcpy", func(b *testing.B) {
		src, dst := make([]float32, fiberBytes/8), make([]float32, fiberBytes/8)
		b.SetBytes(fiberBytes)
		for b.Loop() {
			copy(dst, src)
		}
		copyRate = rate(b)
	})
	theta, g := make([]float32, benchN), make([]float32, benchN)
	for i := range g {
		g[i] = float32(i%7) - 3
	}
	for _, noise := range []bool{false, true} {
		b.Run(fmt.Sprintf("generated/noise=%v", noise), func(b *testing.B) {
			opt, _ := fiber.New(fiber.Defaults(), benchN)
			opt.Noise = noise
			b.SetBytes(fiberBytes)
			for b.Loop() {
				if err := opt.Update(theta, g, 1e-4); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(rate(b)/copyRate, "of-memcpy")
		})
		b.Run(fmt.Sprintf("hostkernel/noise=%v", noise), func(b *testing.B) {
			k := loadFiberKernel(b)
			bufs := [][]float32{theta, g}
			for range 4 {
				bufs = append(bufs, make([]float32, benchN))
			}
			host, _ := fiber.NewHost(fiber.Defaults())
			scalars := scalarSlice(host.Scalars(0, 1e-4))
			rg := hostkernel.Range{Hi: benchN, Seed: 1}
			if noise {
				rg.Noise = 1
			}
			b.SetBytes(fiberBytes)
			for b.Loop() {
				if err := k.Run(bufs, scalars, rg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(rate(b)/copyRate, "of-memcpy")
		})
	}
	b.Run("interp", func(b *testing.B) {
		p := compileFiber(b)
		h := p.Func.DefaultHypers()
		states := make([][]float32, p.NumStates())
		for i := range states {
			states[i] = make([]float32, benchN)
		}
		b.SetBytes(fiberBytes)
		for b.Loop() {
			p.Step(p.HostScalars(h, 0, 1e-4), nil, theta, g, states)
		}
		b.ReportMetric(rate(b)/copyRate, "of-memcpy")
	})
}

// loadFiberKernel builds fiber's host kernel from the checked-in module.
func loadFiberKernel(b *testing.B) *hostkernel.Kernel {
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		b.Fatal(err)
	}
	ll, err := os.ReadFile("../generated/fiber/fiber.ll")
	if err != nil {
		b.Fatal(err)
	}
	so := filepath.Join(b.TempDir(), "fiber.so")
	if err := tc.SharedObject(string(ll), "fiber_cpu", so); err != nil {
		b.Fatal(err)
	}
	k, err := hostkernel.Open(so, "fiber_cpu", 6, 14)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	return k
}

// scalarSlice lists the fields of a generated Scalars in order: the
// kernel's scalar arguments.
func scalarSlice(s any) []float32 {
	v := reflect.ValueOf(s)
	out := make([]float32, v.NumField())
	for i := range out {
		out[i] = float32(v.Field(i).Float())
	}
	return out
}

func compileFiber(b *testing.B) *interp.Program {
	src, err := os.ReadFile("../optimizers/fiber.dsl")
	if err != nil {
		b.Fatal(err)
	}
	u, errs, err := pipeline.Compile("fiber.dsl", src)
	if len(errs) > 0 || err != nil {
		b.Fatal(errs, err)
	}
	fn := u.Func
	p, err := interp.New(fn)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// rate is the bytes per second of a finished benchmark.
func rate(b *testing.B) float64 {
	return float64(fiberBytes) * float64(b.N) / b.Elapsed().Seconds()
}
