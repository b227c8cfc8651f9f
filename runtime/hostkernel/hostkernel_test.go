package hostkernel_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// tinySrc is plain SGD: theta = theta - lr * g, scalars [lr, sigma_w].
const tinySrc = "optimizer tiny\nhyper lr = 0.1 in (0, inf)\nstep {\n\ttheta = theta - lr * g\n}\n"

// build compiles tinySrc into a shared object, once per test run (TestMain
// removes it), and returns its path, skipping the test without LLVM 14
// unless in CI. The tests only load the file.
func build(t *testing.T) (so string, k *llvmgen.Module) {
	t.Helper()
	tiny.once.Do(func() { tiny.so, tiny.module, tiny.err = buildTiny() })
	var missing noToolchain
	switch {
	case errors.As(tiny.err, &missing) && os.Getenv("CI") == "":
		t.Skip(tiny.err)
	case tiny.err != nil:
		t.Fatal(tiny.err)
	}
	return tiny.so, tiny.module
}

// tiny is tinySrc's shared object, built once, in a directory of its own.
var tiny struct {
	once    sync.Once
	dir, so string
	module  *llvmgen.Module
	err     error
}

// buildTiny compiles tinySrc into a shared object in a new temporary
// directory.
func buildTiny() (string, *llvmgen.Module, error) {
	u, errs, err := pipeline.Compile("tiny.dsl", []byte(tinySrc))
	if len(errs) > 0 || err != nil {
		return "", nil, fmt.Errorf("%v %v", errs, err)
	}
	tc, err := llvmgen.FindToolchain()
	if err != nil {
		return "", nil, noToolchain{err}
	}
	if tiny.dir, err = os.MkdirTemp("", "fibergen-hostkernel-test-"); err != nil {
		return "", nil, err
	}
	so := filepath.Join(tiny.dir, "tiny.so")
	return so, u.Module, tc.SharedObject(u.Module.LL, u.Module.HostFunc(), so)
}

// noToolchain is the error of a machine without LLVM 14.
type noToolchain struct{ error }

// TestMain removes the shared object the tests shared.
func TestMain(m *testing.M) {
	code := m.Run()
	if tiny.dir != "" {
		os.RemoveAll(tiny.dir)
	}
	os.Exit(code)
}

// open builds and loads the kernel of tinySrc, closed at the end of the test.
func open(t *testing.T) *hostkernel.Kernel {
	t.Helper()
	so, k := build(t)
	if len(k.Buffers) != 2 || !slices.Equal(k.Scalars, []string{"lr", "sqrt(sigma_w2)"}) {
		t.Fatalf("tiny takes buffers %v and scalars %q, want theta, g and [lr sqrt(sigma_w2)]", k.Buffers, k.Scalars)
	}
	hk, err := hostkernel.Open(so, k.HostFunc(), len(k.Buffers), len(k.Scalars))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hk.Close() })
	return hk
}

// sequence returns n values start, start+step, ...
func sequence(n int, start, step float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = start + float32(i)*step
	}
	return s
}

func TestRun(t *testing.T) {
	k := open(t)
	isas, err := hostkernel.ISAs()
	if err != nil {
		t.Fatal(err)
	}
	best, _ := hostisa.ByName(isas[0])
	if k.Name != "tiny_cpu"+best.Suffix || k.NumBuffers != 2 || k.NumScalars != 2 {
		t.Fatalf("kernel %+v, want the %s variant", k, best.Name)
	}
	// theta = 1, 2, ..., 11 and g = 4, 8, ..., 44 with lr = 0.25: every
	// updated coordinate becomes theta - g/4 = 0, exactly.
	for _, tc := range []struct {
		name    string
		scalars []float32
		r       hostkernel.Range
		want    []float32
	}{
		{"all", []float32{0.25, 0}, hostkernel.Range{Hi: 11},
			[]float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"inner range", []float32{0.25, 0}, hostkernel.Range{Lo: 1, Hi: 10, Offset: 3},
			[]float32{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11}},
		{"one", []float32{0.25, 0}, hostkernel.Range{Lo: 5, Hi: 6},
			[]float32{1, 2, 3, 4, 5, 0, 7, 8, 9, 10, 11}},
		{"lr 0.5", []float32{0.5, 0}, hostkernel.Range{Lo: 2, Hi: 7},
			[]float32{1, 2, -3, -4, -5, -6, -7, 8, 9, 10, 11}},
		// sigma_w = 0 adds 0·z: the same as no noise, g being positive.
		{"noise, sigma_w 0", []float32{0.25, 0}, hostkernel.Range{Hi: 11, Offset: 6, Seed: 7, Step: 3, Noise: 1},
			[]float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		// Without noise, sigma_w is not read.
		{"no noise, sigma_w 1", []float32{0.25, 1}, hostkernel.Range{Lo: 3, Hi: 11, Seed: 7},
			[]float32{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"empty", []float32{0.25, 0}, hostkernel.Range{Lo: 4, Hi: 4, Noise: 1},
			sequence(11, 1, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			theta, g := sequence(11, 1, 1), sequence(11, 4, 4)
			if err := k.Run([][]float32{theta, g}, tc.scalars, tc.r); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(theta, tc.want) {
				t.Errorf("theta = %v, want %v", theta, tc.want)
			}
			if !slices.Equal(g, sequence(11, 4, 4)) {
				t.Errorf("g changed: %v", g)
			}
		})
	}
}

// TestNoise checks that the noise depends on the global index of a
// coordinate only: the same wherever a range starts and however coordinates
// are split between calls.
func TestNoise(t *testing.T) {
	k := open(t)
	const n = 37
	scalars := []float32{1, 1} // theta - (g + z) with lr 1, sigma_w 1
	run := func(theta []float32, r hostkernel.Range) {
		t.Helper()
		r.Seed, r.Step, r.Noise = 42, 5, 1
		if err := k.Run([][]float32{theta, make([]float32, len(theta))}, scalars, r); err != nil {
			t.Fatal(err)
		}
	}
	whole := make([]float32, n)
	run(whole, hostkernel.Range{Hi: n})
	var nonzero, distinct int
	for i, x := range whole {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || math.Abs(float64(x)) > 10 {
			t.Errorf("theta[%d] = %v: not a standard Gaussian draw", i, x)
		}
		if x != 0 {
			nonzero++
		}
		if i > 0 && x != whole[i-1] {
			distinct++
		}
	}
	if nonzero < n-1 || distinct < n-2 {
		t.Errorf("noise %v: %d non-zero, %d changes", whole, nonzero, distinct)
	}

	split := make([]float32, n)
	for _, r := range [][2]int64{{0, 1}, {1, 6}, {6, 23}, {23, 24}, {24, n}} {
		run(split, hostkernel.Range{Lo: r[0], Hi: r[1]})
	}
	if !slices.Equal(split, whole) {
		t.Errorf("noise of split ranges\n%v\nwant\n%v", split, whole)
	}

	for _, lo := range []int64{1, 2, 3, 5} {
		sub := make([]float32, n-lo)
		run(sub, hostkernel.Range{Hi: n - lo, Offset: lo})
		if !slices.Equal(sub, whole[lo:]) {
			t.Errorf("offset %d: noise\n%v\nwant\n%v", lo, sub, whole[lo:])
		}
	}

	other := make([]float32, n)
	if err := k.Run([][]float32{other, make([]float32, n)}, scalars, hostkernel.Range{Hi: n, Seed: 43, Step: 5, Noise: 1}); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(other, whole) {
		t.Error("seeds 42 and 43 draw the same noise")
	}
}

func TestRunErrors(t *testing.T) {
	k := open(t)
	theta, g := sequence(8, 1, 1), sequence(8, 4, 4)
	ok := hostkernel.Range{Hi: 8}
	for _, tc := range []struct {
		name    string
		bufs    [][]float32
		scalars []float32
		r       hostkernel.Range
		want    string
	}{
		{"one buffer", [][]float32{theta}, []float32{1, 0}, ok, "takes 2 buffers, got 1"},
		{"three buffers", [][]float32{theta, g, g}, []float32{1, 0}, ok, "takes 2 buffers, got 3"},
		{"one scalar", [][]float32{theta, g}, []float32{1}, ok, "takes 2 scalars, got 1"},
		{"no scalars", [][]float32{theta, g}, nil, ok, "takes 2 scalars, got 0"},
		{"short buffer", [][]float32{theta, g[:7]}, []float32{1, 0}, ok, "buffer 1 holds 7 values, the range ends at 8"},
		{"lo > hi", [][]float32{theta, g}, []float32{1, 0}, hostkernel.Range{Lo: 5, Hi: 4}, "bad range [5, 4)"},
		{"negative lo", [][]float32{theta, g}, []float32{1, 0}, hostkernel.Range{Lo: -1, Hi: 4}, "bad range [-1, 4)"},
		{"negative offset", [][]float32{theta, g}, []float32{1, 0}, hostkernel.Range{Hi: 4, Offset: -4}, "offset -4 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k.Run(tc.bufs, tc.scalars, tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
			if !slices.Equal(theta, sequence(8, 1, 1)) {
				t.Errorf("a failed Run changed theta: %v", theta)
			}
		})
	}
}

func TestClose(t *testing.T) {
	k := open(t)
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	theta := sequence(4, 1, 1)
	err := k.Run([][]float32{theta, sequence(4, 4, 4)}, []float32{0.25, 0}, hostkernel.Range{Hi: 4})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run after Close: %v, want an error saying the kernel is closed", err)
	}
	if err := k.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.so")
	if _, err := hostkernel.Open(missing, "tiny_cpu", 2, 2); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open of a missing file: %v, want an error naming %s", err, missing)
	}
	notELF := filepath.Join(t.TempDir(), "text.so")
	if err := os.WriteFile(notELF, []byte("not a shared object"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hostkernel.Open(notELF, "tiny_cpu", 2, 2); err == nil || !strings.Contains(err.Error(), notELF) {
		t.Errorf("Open of a text file: %v, want an error naming %s", err, notELF)
	}
	so, _ := build(t)
	for _, symbol := range []string{"tiny_step", "tiny_body", "nothing_cpu"} {
		if _, err := hostkernel.Open(so, symbol, 2, 2); err == nil || !strings.Contains(err.Error(), "no function "+symbol) {
			t.Errorf("Open of %s: %v, want an error saying there is no such function", symbol, err)
		}
	}
}
