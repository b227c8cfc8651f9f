package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/fibergen/fibergen/ir/interp"
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
	files, ok := parseFlags(fs, args, stderr)
	if !ok {
		return 2
	}
	fs.Visit(func(f *flag.Flag) { o.seedSet = o.seedSet || f.Name == "seed" })
	if msg := o.validate(files); msg != "" {
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
func (o *runOptions) validate(files []string) string {
	switch {
	case len(files) != 1:
		return fmt.Sprintf("want exactly one .dsl file, got %d", len(files))
	case o.grads == "" || o.theta == "" || o.out == "":
		return "--grads, --theta and --out are required"
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
	theta, grads, err := o.readInputs()
	if err != nil {
		return err
	}
	if err := checkOutFile("--out", o.out); err != nil {
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
	if _, err := runtime.Run(engine, theta.Data, grads.Data, float64(o.sigmaW2)); err != nil {
		return err
	}
	if err := npy.WriteFile(o.out, theta); err != nil {
		return fmt.Errorf("--out %s: cannot write: %v", o.out, rootCause(err))
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
