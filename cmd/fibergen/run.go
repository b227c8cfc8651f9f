package main

import (
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/npy"
)

// runOptions are the flags of fibergen run.
type runOptions struct {
	grads, theta, out string
	sets              listFlag
	sigmaW2           float64
	noise             string
	seed              uint64
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.grads, "grads", "", "gradients of every step, float32 [T, n] .npy")
	fs.StringVar(&o.theta, "theta", "", "initial parameters, float32 [n] .npy")
	fs.StringVar(&o.out, "out", "", "where to write the final parameters, float32 [n] .npy")
	fs.Var(&o.sets, "set", "override a hyper: name=value (repeatable)")
	fs.Float64Var(&o.sigmaW2, "sigma-w2", 0, "DP noise variance per coordinate")
	fs.StringVar(&o.noise, "noise", "on", "draw DP noise in the step: on or off")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the noise generator")
	files, ok := parseFlags(fs, args, stderr)
	if !ok {
		return 2
	}
	if msg := o.validate(files); msg != "" {
		return usageError(stderr, "run", "%s", msg)
	}
	u := compileFile(files[0], stderr)
	if u == nil {
		return 1
	}
	if err := o.execute(u); err != nil {
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
	case math.IsNaN(o.sigmaW2) || math.IsInf(o.sigmaW2, 0) || o.sigmaW2 < 0:
		return fmt.Sprintf("--sigma-w2 %v: want a finite value >= 0", o.sigmaW2)
	case o.noise != "on" && o.noise != "off":
		return fmt.Sprintf("--noise %q: want on or off", o.noise)
	case o.noise == "on" && o.sigmaW2 > 0:
		return "--noise on is not available yet: the in-kernel noise generator is not built; pass --noise off to treat --grads as already privatized (sigma_w2 still enters the correction terms)"
	}
	return ""
}

func (o *runOptions) execute(u *unit) error {
	h, err := u.fn.ApplySettings(o.sets)
	if err != nil {
		return err
	}
	theta, grads, err := o.readInputs()
	if err != nil {
		return err
	}
	p, err := interp.New(u.fn)
	if err != nil {
		return err
	}
	if _, err := runtime.Run(interp.Engine{P: p, Hypers: h}, theta.Data, grads.Data, o.sigmaW2); err != nil {
		return err
	}
	return npy.WriteFile(o.out, theta)
}

// readInputs reads theta [n] and grads [T, n] and checks their shapes.
func (o *runOptions) readInputs() (theta, grads npy.Array, err error) {
	if theta, err = npy.ReadFile(o.theta); err != nil {
		return theta, grads, fmt.Errorf("--theta %v", err)
	}
	if grads, err = npy.ReadFile(o.grads); err != nil {
		return theta, grads, fmt.Errorf("--grads %v", err)
	}
	switch {
	case theta.Rank() != 1:
		err = fmt.Errorf("--theta %s has shape %s; want a vector [n]", o.theta, shapeString(theta.Shape))
	case grads.Rank() != 2:
		err = fmt.Errorf("--grads %s has shape %s; want a matrix [T, n]", o.grads, shapeString(grads.Shape))
	case grads.Shape[1] != theta.Shape[0]:
		err = fmt.Errorf("--grads %s has shape %s but --theta has %d coordinates", o.grads, shapeString(grads.Shape), theta.Shape[0])
	}
	return theta, grads, err
}

func shapeString(shape []int) string {
	s := "("
	for i, d := range shape {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(d)
	}
	if len(shape) == 1 {
		s += ","
	}
	return s + ")"
}
