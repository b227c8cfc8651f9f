package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Shapes of the good fixtures: T steps of n coordinates.
const (
	fixT = 3
	fixN = 4
)

// brokenDSL has several errors, one per line, of different kinds (a
// redeclaration, undefined names, a syntax error).
const brokenDSL = "testdata/broken.dsl"

// fixtureFiles writes the input files every CLI test draws on into a new
// temporary directory and returns it.
func fixtureFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFixtures(t, dir)
	return dir
}

// writeFixtures writes the fixtures into the empty directory dir. Good
// inputs: grads.npy [T, n], theta.npy [n] and copies of the shipped
// optimizers; bad ones are named for what is wrong with them; adir is an
// empty directory.
func writeFixtures(t *testing.T, dir string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	grads := randFloats(rng, fixT*fixN)
	writeNPY(t, dir, "grads.npy", []int{fixT, fixN}, grads)
	writeNPY(t, dir, "theta.npy", []int{fixN}, randFloats(rng, fixN))
	writeNPY(t, dir, "rank1.npy", []int{fixT * fixN}, grads)
	writeNPY(t, dir, "rank3.npy", []int{fixT, 2, fixN / 2}, grads)
	writeNPY(t, dir, "theta2d.npy", []int{2, fixN / 2}, randFloats(rng, fixN))
	writeNPY(t, dir, "theta_nan.npy", []int{fixN}, []float32{1, 2, float32(math.NaN()), float32(math.Inf(1))})
	writeNPY(t, dir, "theta_inf.npy", []int{fixN}, []float32{float32(math.Inf(-1)), 2, 3, 4})
	writeNPY(t, dir, "wide.npy", []int{fixT, fixN + 1}, randFloats(rng, fixT*(fixN+1)))
	writeNPY(t, dir, "scalar.npy", []int{}, []float32{1})
	writeFile(t, dir, "f64.npy", rawNPY(npyDict("<f8", false, "(2, 3)"), float64Bytes(1, 2, 3, 4, 5, 6)))
	writeFile(t, dir, "i32.npy", rawNPY(npyDict("<i4", false, "(3, 4)"), int32Bytes(make([]int32, 12)...)))
	writeFile(t, dir, "fortran.npy", rawNPY(npyDict("<f4", true, "(3, 4)"), float32Bytes(grads...)))
	writeFile(t, dir, "trunc.npy", rawNPY(npyDict("<f4", false, "(3, 4)"), float32Bytes(grads[:5]...)))
	writeFile(t, dir, "header_only.npy", rawNPY(npyDict("<f4", false, "(3, 4)"), nil)[:30])
	writeFile(t, dir, "random.npy", randBytes(rng, 200))
	writeFile(t, dir, "text.npy", []byte("0.1 0.2 0.3\n0.4 0.5 0.6\n"))
	writeFile(t, dir, "empty.npy", nil)
	copyFile(t, brokenDSL, filepath.Join(dir, "broken.dsl"))
	writeFile(t, dir, "empty.dsl", nil)
	writeFile(t, dir, "unstable.dsl", []byte("optimizer unstable\nhyper k = 2.5 in (0, 3)\nstate x = 0\nstep {\n\tx = (1 - k) * x + k * g\n\ttheta = theta - attenuation(x) * x\n}\n"))
	writeFile(t, dir, "selected.dsl", []byte("optimizer selected\nstate m = 0\nstep {\n\tm = select(g > 0, 0.9 * m + g, m)\n\ttheta = theta - attenuation(m) * m\n}\n"))
	writeFile(t, dir, "signed.dsl", []byte("optimizer signed\nstate m = 0\nstate c = 0\nstep {\n\tm = 0.9 * m + 0.1 * g\n\tc = sign(m)\n\ttheta = theta - attenuation(c) * c\n}\n"))
	writeFile(t, dir, "nonlinear.dsl", []byte("optimizer nonlinear\nstate x = 0\nstep {\n\tx = 0.5 * x + g * g\n\ttheta = theta - attenuation_t(x) * x\n}\n"))
	writeFile(t, dir, "rho.dsl", []byte("optimizer rho\nhyper rho = 0.9\nstate c = 0\nstate s = 0\nstep {\n\tc = rho * c + g\n\ts = s + g\n\ttheta = theta - 0.1 * c\n}\n"))
	for _, name := range shipped {
		copyFile(t, optPath(name), filepath.Join(dir, name+".dsl"))
	}
	copyFile(t, optPath("dp_sgd"), filepath.Join(dir, "dp_sgd_copy.dsl"))
	copyFile(t, optPath("abtrack"), filepath.Join(dir, "abtrack.dsl"))
	writeFile(t, dir, "noread.dsl", []byte("optimizer x\nstep {\n\ttheta = theta - g\n}\n"))
	if err := os.Chmod(filepath.Join(dir, "noread.dsl"), 0); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"adir", "blocked"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A build into blocked/ can write fiber/ but not dp_sgd/.
	writeFile(t, dir, "blocked/dp_sgd", []byte("in the way\n"))
	// A build into gendir/ finds a directory where fiber.go should go.
	if err := os.MkdirAll(filepath.Join(dir, "gendir/fiber/fiber.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "rodir"), 0o555); err != nil { // writable by root only
		t.Fatal(err)
	}
	writeOutputTraps(t, dir)
}

// writeOutputTraps writes what an output must not replace: a FIFO, a link
// to an input, and per-example gradients that make a run with two outputs.
func writeOutputTraps(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.npy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("theta.npy", filepath.Join(dir, "theta-link.npy")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fifodir/fiber"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifodir/fiber/fiber.go"), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	writeNPY(t, dir, "examples.npy", []int{fixT, 2, fixN}, randFloats(rng, fixT*2*fixN))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(to), filepath.Base(to), data)
}

// randFloats returns n values in [-1, 1).
func randFloats(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = 2*rng.Float32() - 1
	}
	return out
}

// randBytes returns n random bytes that do not start with the .npy magic.
func randBytes(rng *rand.Rand, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(rng.Uint32())
	}
	out[0] = 'R'
	return out
}
