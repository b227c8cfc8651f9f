package main

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/optimizers"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime"
)

// TestRunBackendsIdentical checks that --backend go, --backend cpu and
// --backend ptxsim (the PTX on the simulator; any NaN matches any NaN, the
// GPU's being another than the CPU's) agree bit for bit for every shipped
// optimizer (optimizers.Names; the correlated-noise ones are also compared
// in every noise mode by TestCorrelatedBackendsIdentical), noise on and off: on θ and every
// state the runtime hands out (not a noise block's buffers, which reach θ
// through g at every step) at sizes around the groups of four the noise is drawn in, through
// the runtime as `fibergen run` opens it (openUnit), compiling each
// optimizer once; and through the command at the largest size, on the bytes
// of --out and of --lookahead-out. Each run of the command compiles the
// DSL, which costs far more than the steps, so the sizes do not go through
// it.
func TestRunBackendsIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const steps, sigmaW2 = 4, 0.3
	sizes := []int{0, 1, 3, 5, 1025}
	thetas, grads := make([][]float32, len(sizes)), make([][]float32, len(sizes))
	for i, n := range sizes {
		thetas[i], grads[i] = randFloats(r, n), randFloats(r, steps*n)
	}
	for _, name := range optimizers.Names() {
		t.Run(name, func(t *testing.T) {
			var diag strings.Builder
			u := compileFile(optPath(name), &diag)
			if u == nil {
				t.Fatalf("%s", diag.String())
			}
			bufNames := append([]string{"theta"}, shownStates(u)...)
			for _, noise := range []string{"on", "off"} {
				nz := runtime.Noise{SigmaW2: sigmaW2, Draw: noise == "on"}
				for i, n := range sizes {
					want := runBackend(t, u, runtime.Go, nz, thetas[i], grads[i])
					for _, b := range []runtime.Backend{runtime.CPU, runtime.PTXSim} {
						got := runBackend(t, u, b, nz, thetas[i], grads[i])
						for k := range want {
							if !floatbits.Equal(got[k], want[k]) {
								t.Errorf("%s n=%d noise %s: the %s backend's %s differs from the go backend's", name, n, noise, b, bufNames[k])
							}
						}
					}
				}
			}
			last := len(sizes) - 1
			lookahead := u.Func.MixingWeight() >= 0
			for _, noise := range []string{"on", "off"} {
				flags := []string{"--noise", noise, "--sigma-w2", strconv.FormatFloat(sigmaW2, 'g', -1, 64), "--seed", "11"}
				a := runFiles(t, name, thetas[last], grads[last], steps, lookahead, append(flags, "--backend", "go")...)
				b := runFiles(t, name, thetas[last], grads[last], steps, lookahead, append(flags, "--backend", "cpu")...)
				for k, what := range []string{"--out", "--lookahead-out"}[:len(a)] {
					if !bytes.Equal(a[k], b[k]) {
						t.Errorf("%s n=%d noise %s: the cpu backend's %s file differs from the go backend's", name, sizes[last], noise, what)
					}
				}
			}
		})
	}
}

// shownStates are u's states less its noise buffers, which the runtime
// never hands out.
func shownStates(u *pipeline.Unit) []string {
	return slices.DeleteFunc(slices.Clone(u.Func.States), func(s string) bool {
		return slices.Contains(u.Func.NoiseBuffers(), s)
	})
}

// runBackend runs u on backend through the runtime as fibergen run opens
// it, with the noise nz and seed 11, over copies of theta and the steps of
// grads, and returns θ and the states.
func runBackend(t *testing.T, u *pipeline.Unit, backend runtime.Backend, nz runtime.Noise, theta, grads []float32) [][]float32 {
	t.Helper()
	opt, err := openUnit(u, runtime.Options{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	tn, err := opt.Register("theta", theta)
	if err == nil {
		err = errors.Join(opt.SetNoise(nz), opt.SetSeed(11))
	}
	for n, step := len(theta), 0; err == nil && n > 0 && (step+1)*n <= len(grads); step++ {
		if err = tn.SetGrad(grads[step*n : (step+1)*n]); err == nil {
			err = opt.Step()
		}
	}
	var out [][]float32
	for _, s := range append([]string{""}, shownStates(u)...) {
		buf, berr := tn.Params()
		if s != "" {
			buf, berr = tn.State(s)
		}
		out, err = append(out, buf), errors.Join(err, berr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runFiles runs an optimizer with flags and returns the bytes of the --out
// file and, with lookahead, of the --lookahead-out file.
func runFiles(t *testing.T, name string, theta, grads []float32, steps int, lookahead bool, flags ...string) [][]byte {
	t.Helper()
	th, g, out := runInputs(t, theta, grads, steps)
	paths := []string{out}
	args := append([]string{"run", optPath(name), "--grads", g, "--theta", th, "--out", out}, flags...)
	if lookahead {
		paths = append(paths, out+".lookahead.npy")
		args = append(args, "--lookahead-out", paths[1])
	}
	mustRun(t, args...)
	var files [][]byte
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	return files
}

// TestRunNoiseStatistics runs DP-SGD from theta = 0 on zero gradients for
// one step, so theta_1 = -lr·z: the noise drawn, which must be N(0, 1) (mean,
// variance, Kolmogorov–Smirnov), reproducible from the seed and different
// for another seed.
func TestRunNoiseStatistics(t *testing.T) {
	const n, lr = 1 << 18, 0.5
	theta, grads := make([]float32, n), make([]float32, n)
	flags := []string{"--sigma-w2", "1", "--set", "lr=" + strconv.FormatFloat(lr, 'g', -1, 64)}
	z := runOut(t, "dp_sgd", theta, grads, 1, append(flags, "--seed", "2026")...)
	for i := range z {
		z[i] /= -lr // exact: lr is a power of two
	}
	mean, variance := moments(z)
	if math.Abs(mean) > 5/math.Sqrt(n) || math.Abs(variance-1) > 5*math.Sqrt(2.0/n) {
		t.Errorf("noise mean %.5f, variance %.5f; want 0 and 1 within 5 standard errors", mean, variance)
	}
	if d, crit := ksNormal(z), 1.95/math.Sqrt(n); d > crit {
		t.Errorf("Kolmogorov–Smirnov distance to N(0,1) is %.5f, above the 0.1%% critical value %.5f", d, crit)
	}
	if again := runOut(t, "dp_sgd", theta, grads, 1, append(flags, "--seed", "2026")...); !slices.Equal(again, scale(z, -lr)) {
		t.Error("the same seed drew different noise")
	}
	other := runOut(t, "dp_sgd", theta, grads, 1, append(flags, "--seed", "2027")...)
	if same := countEqual(other, scale(z, -lr)); same > n/1000 {
		t.Errorf("seeds 2026 and 2027 drew %d equal values out of %d", same, n)
	}
}

// TestRunRandomSeedPrinted checks that without --seed, run draws a seed,
// prints it, and that passing it reproduces the run.
func TestRunRandomSeedPrinted(t *testing.T) {
	const n = 9
	theta, grads := make([]float32, n), make([]float32, n)
	th, g, out := runInputs(t, theta, grads, 1)
	r := runMain("run", optPath("dp_sgd"), "--grads", g, "--theta", th, "--out", out, "--sigma-w2", "1")
	fields := strings.Fields(r.stderr)
	if r.code != 0 || len(fields) < 5 || fields[2] != "noise" || fields[3] != "seed" {
		t.Fatalf("exit %d, stderr %q; want the seed printed", r.code, r.stderr)
	}
	first := readNPY(t, out).Data
	again := runOut(t, "dp_sgd", theta, grads, 1, "--sigma-w2", "1", "--seed", fields[4])
	if !slices.Equal(first, again) {
		t.Errorf("--seed %s did not reproduce the run", fields[4])
	}
}

func moments(x []float32) (mean, variance float64) {
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (float64(v) - mean) * (float64(v) - mean)
	}
	return mean, variance / float64(len(x)-1)
}

// ksNormal is the Kolmogorov–Smirnov distance between x and N(0, 1).
func ksNormal(x []float32) float64 {
	s := slices.Clone(x)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	d, n := 0.0, float64(len(s))
	for i, v := range s {
		f := 0.5 * math.Erfc(-float64(v)/math.Sqrt2)
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
	}
	return d
}

func scale(x []float32, c float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v * c
	}
	return out
}

func countEqual(a, b []float32) int {
	k := 0
	for i := range a {
		if a[i] == b[i] {
			k++
		}
	}
	return k
}

// TestSignEveryBackend: sign is 1 above 0, -1 below, and the value itself
// at ±0 and NaN (lang.SignOf), the same bits on every backend — NaN
// payload included, as sign only selects.
func TestSignEveryBackend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signs.dsl")
	if err := os.WriteFile(path, []byte("optimizer signs\nstep { theta = sign(theta) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var diag strings.Builder
	u := compileFile(path, &diag)
	if u == nil {
		t.Fatal(diag.String())
	}
	nan := math.Float32frombits(0x7fc01234)
	inf := float32(math.Inf(1))
	in := []float32{0, float32(math.Copysign(0, -1)), nan, inf, -inf, 1e-45, -1e-45, 3, -3}
	want := []float32{0, float32(math.Copysign(0, -1)), nan, 1, -1, 1, -1, 1, -1}
	for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
		got := runBackend(t, u, b, runtime.Noise{}, in, make([]float32, len(in)))[0]
		if !floatbits.Equal(got, want) {
			t.Errorf("%s: sign(%v) = %v, want %v", b, in, got, want)
		}
	}
}

// TestSelectEveryBackend: the comparisons are IEEE's (false with a NaN,
// but != true) and select picks without arithmetic, so every backend gives
// the bits of the same comparisons in Go, a NaN's payload included where
// select passes it on (arithmetic on a NaN may change it on a GPU); a
// uniform condition (a warmup on t) selects on the host.
func TestSelectEveryBackend(t *testing.T) {
	src := `optimizer selects
hyper warmup = 3
step {
	w = select(t < warmup, 2, 1)
	total = select(theta < 0, -1, 0) + select(theta >= 1, 10, 0) + select(theta == 0, 1000, w) + select(theta > 0.5, select(theta <= 2, theta, 3), 0)
	theta = select(theta != theta, theta, total)
}
`
	path := filepath.Join(t.TempDir(), "selects.dsl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var diag strings.Builder
	u := compileFile(path, &diag)
	if u == nil {
		t.Fatal(diag.String())
	}
	pick := func(b bool, x, y float32) float32 {
		if b {
			return x
		}
		return y
	}
	nan := math.Float32frombits(0x7fc01234)
	in := []float32{0, float32(math.Copysign(0, -1)), nan, float32(math.Inf(1)), float32(math.Inf(-1)), -2, 0.25, 0.75, 1, 2, 2.5}
	want := make([]float32, len(in))
	for i, x := range in {
		want[i] = pick(x != x, x, pick(x < 0, -1, 0)+pick(x >= 1, 10, 0)+pick(x == 0, 1000, 2)+pick(x > 0.5, pick(x <= 2, x, 3), 0))
	}
	for _, b := range []runtime.Backend{runtime.Go, runtime.CPU, runtime.PTXSim} {
		got := runBackend(t, u, b, runtime.Noise{}, in, make([]float32, len(in)))[0]
		if !floatbits.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", b, got, want)
		}
	}
}
