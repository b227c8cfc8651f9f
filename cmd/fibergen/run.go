package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/npy"
)

// runOptions are the flags of fibergen run.
type runOptions struct {
	grads, theta, out string
	sets              listFlag
	sigmaW2           floatFlag
	noise, backend    string
	seed              uintFlag
	seedSet           bool
	extrapolate       bool
	diagnostics       bool      // --diagnostics: print clamp_mass after every step
	stdout            io.Writer // where --diagnostics prints
	ex                exampleOptions
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.grads, "grads", "", "gradients of every step, float32 [T, n] .npy")
	fs.StringVar(&o.theta, "theta", "", "initial parameters, float32 [n] .npy")
	fs.StringVar(&o.out, "out", "", "where to write the final parameters, float32 [n] .npy")
	fs.Var(&o.sets, "set", "override a hyper: name=value (repeatable)")
	fs.Var(&o.sigmaW2, "sigma-w2", "DP noise variance per coordinate")
	fs.StringVar(&o.noise, "noise", "on", "draw DP noise in the step (--grads are clipped means): on, or off (--grads are privatized)")
	fs.Var(&o.seed, "seed", "seed of the noise generator (default: random, printed)")
	fs.StringVar(&o.backend, "backend", "go", "go (the reference) or cpu (the host kernel, built with LLVM)")
	fs.BoolVar(&o.extrapolate, "allow-extrapolation", false, "allow a two_point weight a outside [0, 1]")
	fs.BoolVar(&o.diagnostics, "diagnostics", false, "print clamp_mass after every step (the .dsl must declare it)")
	fs.StringVar(&o.ex.examples, "example-grads", "", "per-example gradients ∇f(θ_t; ξ) of every step, float32 [T, B, n] .npy (instead of --grads)")
	fs.StringVar(&o.ex.lookahead, "lookahead-grads", "", "two_point: per-example gradients at the look-ahead point, float32 [T, B, n] .npy")
	fs.Var(&o.ex.clip, "clip", "with --example-grads: the clipping norm C")
	fs.Var(&o.ex.multiplier, "noise-multiplier", "with --example-grads: σ_DP, so that σ_w = σ_DP·C/B")
	fs.StringVar(&o.ex.clippedOut, "clipped-out", "", "with --example-grads: write the clipped means of every step, float32 [T, n] .npy")
	fs.StringVar(&o.ex.lookaheadOut, "lookahead-out", "", "two_point: write the look-ahead point after the last step, float32 [n] .npy")
	o.stdout = stdout
	files, ok := parseFlags(fs, args, stderr)
	if !ok {
		return 2
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.seedSet = given["seed"]
	if msg := o.validate(files, given); msg != "" {
		return usageError(stderr, "run", "%s", msg)
	}
	u := compileFile(files[0], stderr)
	if u == nil {
		return 1
	}
	if err := o.execute(u, stderr); err != nil {
		return fail(stderr, "run", err)
	}
	return 0
}

// validate checks the flags that need no file; it returns a message or "".
func (o *runOptions) validate(files []string, given map[string]bool) string {
	if msg := o.validateExamples(given); msg != "" {
		return msg
	}
	switch {
	case len(files) != 1:
		return fmt.Sprintf("want exactly one .dsl file, got %d", len(files))
	case o.grads == "" && o.ex.examples == "" || o.theta == "" || o.out == "":
		return "--grads (or --example-grads), --theta and --out are required"
	case math.IsNaN(float64(o.sigmaW2)) || math.IsInf(float64(o.sigmaW2), 0) || o.sigmaW2 < 0:
		return fmt.Sprintf("--sigma-w2 %v: want a finite value >= 0", float64(o.sigmaW2))
	case o.noise != "on" && o.noise != "off":
		return fmt.Sprintf("--noise %q: want on or off", o.noise)
	case o.backend != "go" && o.backend != "cpu":
		return fmt.Sprintf("--backend %q: want go or cpu", o.backend)
	}
	return ""
}

func (o *runOptions) execute(u *pipeline.Unit, stderr io.Writer) error {
	h, err := u.Func.ApplySettings(o.sets)
	if err != nil {
		return err
	}
	if err := checkLookaheadOut(u.Func, o.ex.lookaheadOut); err != nil {
		return err
	}
	if o.ex.examples != "" {
		return o.executeExamples(u, h, stderr)
	}
	theta, grads, err := o.readInputs()
	if err != nil {
		return err
	}
	if err := o.checkObservation(u.Func, h, grads.Shape[0]); err != nil {
		return err
	}
	if err := o.checkOutputs(); err != nil {
		return err
	}
	p, err := interp.New(u.Func)
	if err != nil {
		return err
	}
	e := interp.Engine{P: p, Hypers: h, Noise: o.noise == "on", Seed: uint64(o.seed)}
	if e.Noise && !o.seedSet && o.sigmaW2 > 0 {
		e.Seed = rng.RandomSeed()
		fmt.Fprintf(stderr, "fibergen run: noise seed %d (pass --seed %d to draw the same noise again)\n", e.Seed, e.Seed)
	}
	engine, closeEngine, err := newEngine(o.backend, u, e)
	if err != nil {
		return err
	}
	defer closeEngine()
	if engine, err = o.withDiagnostics(engine, p, h); err != nil {
		return err
	}
	states, err := runtime.Run(engine, theta.Data, grads.Data, float64(o.sigmaW2))
	if err != nil {
		return err
	}
	if err := npy.WriteFile(o.out, theta); err != nil {
		return fmt.Errorf("--out %s: cannot write: %v", o.out, rootCause(err))
	}
	return o.writeLookahead(u.Func, theta, states, grads.Shape[0])
}

// checkLookaheadOut refuses --lookahead-out for an optimizer without a
// two_point observation.
func checkLookaheadOut(fn *ir.Func, path string) error {
	if path != "" && fn.MixingWeight() < 0 {
		return fmt.Errorf("--lookahead-out: %s has no two_point observation, so no look-ahead point", fn.Name)
	}
	return nil
}

// writeLookahead writes --lookahead-out after steps steps: theta itself
// before the first step, then the state the steps wrote.
func (o *runOptions) writeLookahead(fn *ir.Func, theta npy.Array, states [][]float32, steps int) error {
	if o.ex.lookaheadOut == "" {
		return nil
	}
	p := theta
	if steps > 0 {
		p = npy.Array{Shape: theta.Shape, Data: states[slices.Index(fn.States, lang.LookaheadState)]}
	}
	if err := npy.WriteFile(o.ex.lookaheadOut, p); err != nil {
		return fmt.Errorf("--lookahead-out %s: cannot write: %v", o.ex.lookaheadOut, rootCause(err))
	}
	return nil
}

// checkObservation refuses a two_point weight a outside [0, 1] at any of
// the run's steps unless --allow-extrapolation.
func (o *runOptions) checkObservation(fn *ir.Func, h []float64, steps int) error {
	for t := 0; t < steps && !o.extrapolate; t++ {
		if err := fn.CheckObservation(h, t); err != nil {
			return fmt.Errorf("%w (--allow-extrapolation)", err)
		}
	}
	return nil
}

// checkOutFile checks, before any work is done, that a file can be put at
// path, given with the flag name: path is not a directory and its
// directory exists.
func checkOutFile(name, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s is a directory; want a file name", name, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: cannot write into directory %s: %v", name, path, dir, rootCause(err))
	case !st.IsDir():
		return fmt.Errorf("%s %s: %s is not a directory", name, path, dir)
	}
	return nil
}

// rootCause strips the operation and path from a file system error, whose
// caller names the path already: "open x: no such file" becomes "no such
// file".
func rootCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// readInputs reads theta [n] and grads [T, n] and checks their shapes.
func (o *runOptions) readInputs() (theta, grads npy.Array, err error) {
	if theta, err = readArray("--theta", o.theta); err != nil {
		return theta, grads, err
	}
	if grads, err = readArray("--grads", o.grads); err != nil {
		return theta, grads, err
	}
	switch {
	case theta.Rank() != 1:
		err = fmt.Errorf("--theta %s has shape %s; want a vector [n]", o.theta, npy.FormatShape(theta.Shape))
	case grads.Rank() != 2:
		err = fmt.Errorf("--grads %s has shape %s; want a matrix [T, n]", o.grads, npy.FormatShape(grads.Shape))
	case grads.Shape[1] != theta.Shape[0]:
		err = fmt.Errorf("--grads %s has shape %s but --theta has %d coordinates", o.grads, npy.FormatShape(grads.Shape), theta.Shape[0])
	}
	return theta, grads, err
}

// readArray reads the .npy file path given with the flag name.
func readArray(name, path string) (npy.Array, error) {
	a, err := npy.ReadFile(path)
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return a, fmt.Errorf("%s: cannot read %s: %v", name, path, pe.Err)
	case err != nil:
		return a, fmt.Errorf("%s %v", name, err) // the error starts with path
	}
	return a, nil
}
