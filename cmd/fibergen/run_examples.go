package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/npy"
)

// exampleOptions are the flags of run's per-example mode: the run clips and
// averages per-example gradients itself, through the runtime's privatize
// kernels, and draws the noise of σ_w = σ_DP·C/B.
type exampleOptions struct {
	examples, lookahead string    // --example-grads, --lookahead-grads: [T, B, n]
	clip, multiplier    floatFlag // --clip C, --noise-multiplier σ_DP
	clippedOut          string    // --clipped-out: the clipped means [T, n]
	lookaheadOut        string    // --lookahead-out: the final look-ahead point [n]
}

// validateExamples checks the per-example flags against the others; given
// lists the flags set on the command line. It returns a message or "".
func (o *runOptions) validateExamples(given map[string]bool) string {
	e := &o.ex
	if e.examples == "" {
		for _, f := range []string{"lookahead-grads", "clip", "noise-multiplier", "clipped-out"} {
			if given[f] {
				return fmt.Sprintf("--%s works only with --example-grads", f)
			}
		}
		return ""
	}
	switch {
	case o.grads != "":
		return "--grads and --example-grads are alternatives: give the clipped means or the per-example gradients"
	case !(e.clip > 0) || math.IsInf(float64(e.clip), 0):
		return fmt.Sprintf("--example-grads needs --clip C with C > 0 finite (got %v)", float64(e.clip))
	case !(e.multiplier >= 0) || math.IsInf(float64(e.multiplier), 0):
		return fmt.Sprintf("--noise-multiplier %v: want a finite value >= 0", float64(e.multiplier))
	case given["sigma-w2"]:
		return "with --example-grads the noise variance is (σ_DP·C/B)²: give --noise-multiplier, not --sigma-w2"
	case o.noise != "on":
		return "with --example-grads the run draws the noise itself; --noise-multiplier 0 runs without"
	}
	return ""
}

// executeExamples runs the steps through the runtime: Privatize clips and
// averages each step's per-example gradients, Step adds the noise.
func (o *runOptions) executeExamples(u *pipeline.Unit, h []float64, stderr io.Writer) error {
	theta, cur, look, err := o.readExamples()
	if err != nil {
		return err
	}
	if err := o.checkObservation(u.Func, h, cur.Shape[0]); err != nil {
		return err
	}
	if err := o.checkOutputs(); err != nil {
		return err
	}
	opt, tn, err := o.openRuntime(u, h, theta, cur.Shape[1], stderr)
	if err != nil {
		return err
	}
	defer opt.Close()
	clipped, err := o.stepExamples(opt, tn, cur, look)
	if err != nil {
		return err
	}
	return o.writeExampleOutputs(tn, clipped, cur.Shape)
}

// readExamples reads theta [n] and the per-example gradients [T, B, n].
func (o *runOptions) readExamples() (theta, cur, look npy.Array, err error) {
	if theta, err = readArray("--theta", o.theta); err != nil {
		return
	}
	if theta.Rank() != 1 {
		return theta, cur, look, fmt.Errorf("--theta %s has shape %s; want a vector [n]", o.theta, npy.FormatShape(theta.Shape))
	}
	if cur, err = readExampleArray("--example-grads", o.ex.examples, theta.Shape[0]); err != nil || o.ex.lookahead == "" {
		return
	}
	if look, err = readExampleArray("--lookahead-grads", o.ex.lookahead, theta.Shape[0]); err == nil && !slices.Equal(look.Shape, cur.Shape) {
		err = fmt.Errorf("--lookahead-grads %s has shape %s but --example-grads has %s", o.ex.lookahead, npy.FormatShape(look.Shape), npy.FormatShape(cur.Shape))
	}
	return
}

// readExampleArray reads per-example gradients [T, B, n] for n coordinates.
func readExampleArray(flag, path string, n int) (npy.Array, error) {
	a, err := readArray(flag, path)
	switch {
	case err != nil:
	case a.Rank() != 3:
		err = fmt.Errorf("%s %s has shape %s; want [T, B, n]: T steps of B examples", flag, path, npy.FormatShape(a.Shape))
	case a.Shape[2] != n:
		err = fmt.Errorf("%s %s has shape %s but --theta has %d coordinates", flag, path, npy.FormatShape(a.Shape), n)
	case a.Shape[1] == 0:
		err = fmt.Errorf("%s %s has shape %s: a batch needs at least one example", flag, path, npy.FormatShape(a.Shape))
	}
	return a, err
}

// checkOutputs checks every output path before any work is done.
func (o *runOptions) checkOutputs() error {
	for _, out := range []struct{ flag, path string }{{"--out", o.out}, {"--clipped-out", o.ex.clippedOut}, {"--lookahead-out", o.ex.lookaheadOut}} {
		if out.path == "" {
			continue
		}
		if err := checkOutFile(out.flag, out.path); err != nil {
			return err
		}
	}
	return nil
}

// openRuntime opens u through the runtime from a temporary directory laid
// out as fibergen build lays out generated/<name>/ (the host kernel comes
// from the cache), with the hypers h, the DP settings and theta registered.
func (o *runOptions) openRuntime(u *pipeline.Unit, h []float64, theta npy.Array, batch int, stderr io.Writer) (*runtime.Optimizer, *runtime.Tensor, error) {
	dir, err := o.kernelDir(u)
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	opt, err := runtime.Open(dir, runtime.Options{Backend: runtime.Backend(o.backend), AllowExtrapolation: o.extrapolate})
	if err != nil {
		return nil, nil, err
	}
	if err := o.configure(opt, u.Func, h, batch, stderr); err != nil {
		opt.Close()
		return nil, nil, err
	}
	tn, err := opt.Register("theta", theta.Data)
	if err != nil {
		opt.Close()
		return nil, nil, err
	}
	return opt, tn, nil
}

// kernelDir writes u's manifest, and for the cpu backend a link to its host
// kernel, into a new temporary directory named after the optimizer.
func (o *runOptions) kernelDir(u *pipeline.Unit) (string, error) {
	root, err := os.MkdirTemp("", "fibergen-run-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, u.Func.Name)
	err = os.Mkdir(dir, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, u.Func.Name+".json"), u.Manifest, 0o644)
	}
	if err == nil && o.backend == "cpu" {
		var so string
		if so, err = hostKernelFile(u.Module); err == nil {
			err = os.Symlink(so, filepath.Join(dir, u.Func.Name+".so"))
		}
	}
	if err != nil {
		os.RemoveAll(root)
		return "", fmt.Errorf("--backend %s: %v", o.backend, err)
	}
	return dir, nil
}

// configure sets the hypers, the DP settings and the seed. The DP batch
// size is batch, the B dimension of the [T, B, n] gradients: every step
// privatizes B rows, a fixed-size batch, so Privatize's divisor (the
// expected batch size) is the number of rows.
func (o *runOptions) configure(opt *runtime.Optimizer, fn *ir.Func, h []float64, batch int, stderr io.Writer) error {
	set := map[string]float64{}
	for i, hy := range fn.Hypers {
		set[hy.Name] = h[i]
	}
	if err := opt.SetHypers(set); err != nil {
		return err
	}
	if err := opt.SetDP(runtime.DP{ClipNorm: float64(o.ex.clip), NoiseMultiplier: float64(o.ex.multiplier), BatchSize: batch}); err != nil {
		return err
	}
	if o.diagnostics {
		if err := opt.EnableDiagnostics(); err != nil {
			return fmt.Errorf("--diagnostics: %v", err)
		}
	}
	seed := uint64(o.seed)
	if !o.seedSet && o.ex.multiplier > 0 {
		seed = rng.RandomSeed()
		fmt.Fprintf(stderr, "fibergen run: noise seed %d (pass --seed %d to draw the same noise again)\n", seed, seed)
	}
	return opt.SetSeed(seed)
}

// stepExamples privatizes and steps once per step of cur; it returns the
// clipped means when --clipped-out asks for them.
func (o *runOptions) stepExamples(opt *runtime.Optimizer, tn *runtime.Tensor, cur, look npy.Array) ([]float32, error) {
	steps, rows := cur.Shape[0], cur.Shape[1]*cur.Shape[2]
	var clipped []float32
	for t := range steps {
		var l []float32
		if look.Data != nil {
			l = look.Data[t*rows : (t+1)*rows]
		}
		if _, err := opt.Privatize(cur.Data[t*rows:(t+1)*rows], l); err != nil {
			return nil, fmt.Errorf("step %d: %v", t, err)
		}
		if o.ex.clippedOut != "" {
			g, err := tn.Grad()
			if err != nil {
				return nil, err
			}
			clipped = append(clipped, g...)
		}
		if err := opt.Step(); err != nil {
			return nil, fmt.Errorf("step %d: %v", t, err)
		}
		if err := o.printClampMass(opt, t); err != nil {
			return nil, err
		}
	}
	return clipped, nil
}

// printClampMass prints step t's clamp_mass as --diagnostics does in the
// other mode.
func (o *runOptions) printClampMass(opt *runtime.Optimizer, t int) error {
	if !o.diagnostics {
		return nil
	}
	x, err := opt.ClampMass()
	if err != nil {
		return err
	}
	return printClampMass(o.stdout, t, x)
}

// writeExampleOutputs writes theta and the optional outputs.
func (o *runOptions) writeExampleOutputs(tn *runtime.Tensor, clipped []float32, shape []int) error {
	theta, err := tn.Params()
	if err != nil {
		return err
	}
	outs := []struct {
		flag, path string
		a          func() (npy.Array, error)
	}{
		{"--out", o.out, func() (npy.Array, error) { return npy.Array{Shape: []int{len(theta)}, Data: theta}, nil }},
		{"--clipped-out", o.ex.clippedOut, func() (npy.Array, error) {
			return npy.Array{Shape: []int{shape[0], shape[2]}, Data: clipped}, nil
		}},
		{"--lookahead-out", o.ex.lookaheadOut, func() (npy.Array, error) {
			p, err := tn.Lookahead()
			return npy.Array{Shape: []int{len(p)}, Data: p}, err
		}},
	}
	for _, out := range outs {
		if out.path == "" {
			continue
		}
		a, err := out.a()
		if err == nil {
			err = npy.WriteFile(out.path, a)
		}
		if err != nil {
			return fmt.Errorf("%s %s: cannot write: %v", out.flag, out.path, rootCause(err))
		}
	}
	return nil
}
