package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/npy"
)

// runOptions are the flags of fibergen run.
type runOptions struct {
	grads, theta, out string
	sets              setsFlag
	groups            groupsFlag
	tensorSizes       sizesFlag // --tensors
	sigmaW2           floatFlag
	noise, backend    string
	noiseMode         modeFlag // --noise-mode: philox or secure
	seed              uintFlag
	seedSet           bool
	extrapolate       bool
	unstable          bool      // --allow-unstable
	diagnostics       bool      // --diagnostics: print clamp_mass after every step
	noClampWarning    bool      // --no-clamp-warning
	stdout            io.Writer // where --diagnostics prints
	stderr            io.Writer
	stdoutClosed      bool // a --diagnostics line met a closed pipe: print no more
	ex                exampleOptions
	stateOuts         stateOutsFlag // --state-out NAME=FILE.npy
	params            paramsFlag
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.grads, "grads", "", "gradients of every step, float32 [T, n] .npy")
	fs.StringVar(&o.theta, "theta", "", "initial parameters, float32 [n] .npy")
	fs.StringVar(&o.out, "out", "", "where to write the final parameters, float32 [n] .npy")
	fs.Var(&o.sets, "set", "override a hyper: name=value (repeatable)")
	fs.Var(&o.groups, "group", "hypers of the coordinates [LO, HI) of theta only, e.g. weight decay off for a bias: LO:HI:name=value[,name=value...] (repeatable; clipping and noise stay joint)")
	fs.Var(&o.tensorSizes, "tensors", "theta's tensors by their sizes or shapes, N[,RxC...] summing to theta's: each steps as its own (a per-tensor norm, sum, mean, max or min is its own; a shape's last dimension is its columns, the others its rows, as states per row and column read them; default: one tensor of one row, split where a --group starts or ends)")
	fs.Var(&o.sigmaW2, "sigma-w2", "DP noise variance per coordinate (with --grads and --noise on: required)")
	fs.StringVar(&o.noise, "noise", "on", "draw DP noise in the step (--grads are clipped means): on, or off (--grads are privatized; with --example-grads: no noise, not private)")
	fs.Var(&o.seed, "seed", "seed of the noise generator (default: random, printed); philox mode only")
	o.noiseMode = philoxMode
	fs.Var(&o.noiseMode, "noise-mode", "the drawn noise's scheme: philox (reproducible with --seed) or secure (ChaCha20 keyed from the OS, on a grid; no --seed, never reproducible)")
	fs.StringVar(&o.backend, "backend", "go", "go (the reference), cpu (the host kernel, built with LLVM) or ptxsim (the PTX kernel on the PTX simulator)")
	fs.BoolVar(&o.extrapolate, "allow-extrapolation", false, "allow a two_point weight a outside [0, 1]")
	fs.BoolVar(&o.unstable, "allow-unstable", false, "allow hypers at which a state grows without bound (a filter of spectral radius above 1)")
	fs.BoolVar(&o.diagnostics, "diagnostics", false, "print clamp_mass after every step (the .dsl must declare it)")
	fs.BoolVar(&o.noClampWarning, "no-clamp-warning", false, "do not warn when the corrected second moment sits on its fixed floor for much of the update")
	fs.StringVar(&o.ex.examples, "example-grads", "", "per-example gradients ∇f(θ_t; ξ) of every step, float32 [T, B, n] .npy (instead of --grads)")
	fs.StringVar(&o.ex.lookahead, "lookahead-grads", "", "two_point: per-example gradients at the look-ahead point, float32 [T, B, n] .npy")
	fs.Var(&o.ex.clip, "clip", "with --example-grads: the clipping norm C")
	fs.Var(&o.ex.clipGroups, "clip-groups", "with --example-grads, instead of --clip: clip each example per group, the next N coordinates to norm C: N:C[,N:C...] summing to theta's (splits the tensors there, as --group does)")
	fs.BoolVar(&o.ex.proportional, "proportional-noise", false, "with --clip-groups: each group's noise σ_DP·√G·C/B, in proportion to its norm, instead of σ_DP·√ΣC²/B in every group")
	fs.Var(&o.ex.multiplier, "noise-multiplier", "with --example-grads: σ_DP, so that σ_w = σ_DP·C/B (required unless --noise off)")
	fs.StringVar(&o.ex.clippedOut, "clipped-out", "", "with --example-grads: write the clipped means of every step, float32 [T, n] .npy")
	fs.StringVar(&o.ex.lookaheadOut, "lookahead-out", "", "two_point: write the look-ahead point after the last step, float32 [n] .npy")
	fs.Var(&o.params, "params", paramsUsage+"; --theta's values round to it, --out is their float32 values")
	fs.Var(&o.stateOuts, "state-out", "write a state after the last step: NAME=FILE.npy, float32 [n]; a state per row or column holds each tensor's rows or columns, tensor after tensor (repeatable)")
	o.stdout, o.stderr = stdout, stderr
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
	u := o.params.compiler(false)(files[0], stderr)
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
		return fmt.Sprintf("want exactly one .dsl file or shipped optimizer name, got %d", len(files))
	case o.grads == "" && o.ex.examples == "" || o.theta == "" || o.out == "":
		return "--grads (or --example-grads), --theta and --out are required"
	case math.IsNaN(float64(o.sigmaW2)) || math.IsInf(float64(o.sigmaW2), 0) || o.sigmaW2 < 0:
		return fmt.Sprintf("--sigma-w2 %v: want a finite value >= 0", float64(o.sigmaW2))
	case o.noiseMode.secure() && given["seed"]:
		return "--seed with --noise-mode secure: secure noise takes its key from the operating system and no seed, since a known seed makes the noise subtractable"
	case o.noise != "on" && o.noise != "off":
		return fmt.Sprintf("--noise %q: want on or off", o.noise)
	case o.grads != "" && o.noise == "on" && !given["sigma-w2"]:
		return "--grads with --noise on (the default) needs the noise given explicitly: --sigma-w2 X, or --noise off for gradients privatized already"
	case o.backend != "go" && o.backend != "cpu" && o.backend != "ptxsim":
		return fmt.Sprintf("--backend %q: want go, cpu or ptxsim", o.backend)
	}
	return ""
}

// runArrays are the arrays a run reads: theta, and the gradients of
// --grads or those of --example-grads and --lookahead-grads.
type runArrays struct {
	theta, grads, cur, look npy.Array
}

// execute checks the run and reads its inputs before any work, then runs u
// through the runtime, as a trainer would; no output is written unless
// every step ran.
func (o *runOptions) execute(u *pipeline.Unit, stderr io.Writer) error {
	if o.unstable {
		u.Func.DropBoundedFilters()
	}
	in, err := o.check(u, stderr)
	if err != nil {
		return err
	}
	// The run checked the observation of every step, naming its own flag.
	opt, err := openUnit(u, runtime.Options{Backend: runtime.Backend(o.backend), AllowExtrapolation: true, AllowUnstable: o.unstable,
		NoClampWarning: o.noClampWarning, SecureNoise: o.noiseMode.secure()})
	if err != nil {
		return err
	}
	defer opt.Close()
	if err := opt.ApplySettings(o.sets); err != nil {
		return err
	}
	if o.ex.examples != "" {
		return o.executeExamples(opt, in, stderr)
	}
	return o.executeGrads(opt, in, stderr)
}

// check reads the inputs and checks them, the settings at each step
// (checkSettings, whose warnings it prints) and every output path; it
// returns the inputs.
func (o *runOptions) check(u *pipeline.Unit, stderr io.Writer) (in runArrays, err error) {
	if _, err := u.Func.ApplySettings(o.sets); err != nil {
		return in, err // before the inputs are read
	}
	if o.ex.lookaheadOut != "" && u.Func.MixingWeight() < 0 {
		return in, fmt.Errorf("--lookahead-out: %s has no two_point observation, so no look-ahead point", u.Func.Name)
	}
	if err := o.stateOuts.checkNames(u.Func); err != nil {
		return in, err
	}
	in, steps, err := o.read()
	if err != nil {
		return in, err
	}
	if _, err := o.cuts(in.theta.Shape[0]); err != nil {
		return in, err // the layout of --tensors, --group and --clip-groups, before the run opens
	}
	warnings, err := checkSettings(u.Func, o.sets, steps, o.extrapolate)
	if err != nil {
		return in, err
	}
	if err := o.checkOutputs(); err != nil {
		return in, err
	}
	warn(stderr, "run", append(warnings, o.shapesWarning(u.Func)...))
	return in, nil
}

// shapesWarning warns where fn reads each tensor's rows and columns and
// --tensors gives no tensor two dimensions: each is then one row, and a
// factored state is no factoring.
func (o *runOptions) shapesWarning(fn *ir.Func) []string {
	if !fn.HasLines() || slices.ContainsFunc(o.tensorSizes, func(dims []int) bool { return len(dims) > 1 }) {
		return nil
	}
	return []string{fmt.Sprintf("%s has states per row or per column (or row and column sums), and no tensor has a shape: "+
		"each is one row; give theta's tensors' shapes with --tensors RxC[,...]", fn.Name)}
}

// read reads the run's inputs and returns them with the number of steps.
func (o *runOptions) read() (in runArrays, steps int, err error) {
	if o.ex.examples != "" {
		if in.theta, in.cur, in.look, err = o.readExamples(); err != nil {
			return in, 0, err
		}
		return in, in.cur.Shape[0], nil
	}
	if in.theta, in.grads, err = o.readInputs(); err != nil {
		return in, 0, err
	}
	return in, in.grads.Shape[0], nil
}

// executeGrads steps on the gradients of --grads: clipped means with the
// noise of --sigma-w2 drawn in the kernel, or privatized ones (--noise off).
func (o *runOptions) executeGrads(opt *runtime.Optimizer, in runArrays, stderr io.Writer) error {
	theta, grads := in.theta, in.grads
	steps, n := grads.Shape[0], theta.Shape[0]
	noise := runtime.Noise{SigmaW2: float64(o.sigmaW2), Draw: o.noise == "on"}
	if err := opt.SetNoise(noise); err != nil {
		return err
	}
	o.warnNoNoise(opt, stderr)
	tn, err := o.start(opt, theta, noise.Draw && noise.SigmaW2 > 0, stderr)
	if err != nil {
		return err
	}
	for t := range steps {
		if err := tn.SetGrad(grads.Data[t*n : (t+1)*n]); err != nil {
			return stepError(t, steps, err)
		}
		if err := o.step(opt, t); err != nil {
			return stepError(t, steps, err)
		}
	}
	return o.writeOutputs(opt, tn, nil)
}

// warnUnstarted says on stderr, a line each, which --state-out states of
// a run of no steps start from another value at step 0 (`state x =
// theta`): their buffers hold the declared init (0) until a step writes
// them, which a researcher reading the file would not expect.
func (o *runOptions) warnUnstarted(opt *runtime.Optimizer) {
	if opt.Steps() > 0 {
		return
	}
	for _, s := range o.stateOuts {
		for _, b := range opt.Manifest().Buffers {
			if b.Name == s.name && b.Start != "" {
				fmt.Fprintf(o.stderr, "fibergen run: warning: --state-out %s: no step ran, and state %s starts at %s at step 0: "+
					"the file holds its buffer before that, %s\n", s.name, s.name, b.Start, cmp.Or(b.Init, "0"))
			}
		}
	}
}

// warnNoNoise says on stderr, in one line, that the run releases its
// output without noise where the flags ask for none while the gradients are
// not privatized yet: an explicit zero (--noise-multiplier 0, --sigma-w2 0
// with noise on) or --noise off with --example-grads, named by its flag.
// validate has made sure that such a zero was given, never defaulted to.
// It takes the runtime's warnings of the settings just made (Warnings),
// which say the same where a flag is zero and are printed where none is (a
// variance that underflows).
func (o *runOptions) warnNoNoise(opt *runtime.Optimizer, stderr io.Writer) {
	pending := opt.Warnings()
	var given string
	switch {
	case o.ex.examples != "" && o.noise == "off":
		given = "--noise off"
	case o.ex.examples != "" && o.ex.multiplier == 0:
		given = "--noise-multiplier 0"
	case o.ex.examples == "" && o.noise == "on" && o.sigmaW2 == 0:
		given = "--sigma-w2 0"
	default:
		for _, w := range pending {
			fmt.Fprintf(stderr, "fibergen run: warning: %s\n", w)
		}
		return
	}
	fmt.Fprintf(stderr, "fibergen run: warning: %s: the steps add no DP noise, so the output is not private (ε = ∞)\n", given)
}

// start enables the diagnostics, fixes the seed (philox mode) and registers
// theta; drawn says whether the steps draw noise, which a seed not given is
// random for.
func (o *runOptions) start(opt *runtime.Optimizer, theta npy.Array, drawn bool, stderr io.Writer) (tensors, error) {
	if o.diagnostics {
		if err := opt.EnableDiagnostics(); err != nil {
			return nil, fmt.Errorf("--diagnostics: %w", cause(err))
		}
	}
	if o.noiseMode.secure() {
		if drawn {
			fmt.Fprintf(stderr, "fibergen run: secure noise under a key from the operating system, not shown: this run's noise cannot be drawn again\n")
		}
		return o.register(opt, theta.Data)
	}
	seed := uint64(o.seed)
	if !o.seedSet && drawn {
		seed = opt.Seed() // random
		fmt.Fprintf(stderr, "fibergen run: noise seed %d (pass --seed %d to draw the same noise again)\n", seed, seed)
	}
	if err := opt.SetSeed(seed); err != nil {
		return nil, err
	}
	return o.register(opt, theta.Data)
}

// step runs step t, prints the runtime's warnings (the clamp warning) on the
// standard error, then its clamp_mass under --diagnostics: a line
// `step T: clamp_mass = X`, T from 0, X with the digits that read it back
// exactly.
func (o *runOptions) step(opt *runtime.Optimizer, t int) error {
	if err := opt.Step(); err != nil {
		return err
	}
	for _, w := range opt.Warnings() {
		fmt.Fprintf(o.stderr, "fibergen run: warning: %s\n", strings.ReplaceAll(w, "Options.NoClampWarning", "--no-clamp-warning"))
	}
	if !o.diagnostics || o.stdoutClosed {
		return nil
	}
	x, err := opt.ClampMass()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.stdout, "step %d: clamp_mass = %v\n", t, x)
	if errors.Is(err, syscall.EPIPE) {
		// A reader that stopped early (| head): the run and its outputs go on.
		o.stdoutClosed = true
		fmt.Fprintf(o.stderr, "fibergen run: the standard output was closed at step %d: no more --diagnostics lines; the run goes on\n", t)
		return nil
	}
	return err
}

// stepError is the error of step t of steps, which stops the run before
// any output is written. The runtime's refusal of a non-finite gradient
// says that the step was skipped, as it is for a trainer that goes on; the
// run stops, so the message says that instead.
func stepError(t, steps int, err error) error {
	var grad *runtime.NonFiniteError
	var example *runtime.NonFiniteExampleError
	switch {
	case errors.As(err, &grad):
		err = fmt.Errorf("the gradient of %s[%d] is %v", grad.Tensor, grad.Index, grad.Value)
	case errors.As(err, &example):
		err = fmt.Errorf("example %d has a NaN or ±Inf gradient entry (or one whose square overflows float32)", example.Example)
	}
	return fmt.Errorf("step %d of steps 0..%d: %w: the run stops there, and no output file was written", t, steps-1, err)
}

// cause is the error that err wraps, the one a flag's message names.
func cause(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// file is a path a flag names.
type file struct{ flag, path string }

// checkOutputs checks every output path before any work is done: each can
// be written, and none names an input or another output.
func (o *runOptions) checkOutputs() error {
	ins := []file{{"--grads", o.grads}, {"--theta", o.theta}, {"--example-grads", o.ex.examples}, {"--lookahead-grads", o.ex.lookahead}}
	var outs []file
	for _, out := range append([]file{{"--out", o.out}, {"--clipped-out", o.ex.clippedOut}, {"--lookahead-out", o.ex.lookaheadOut}}, o.stateOuts.files()...) {
		if out.path == "" {
			continue
		}
		if err := checkOutFile(out.flag, out.path); err != nil {
			return err
		}
		for _, other := range slices.Concat(ins, outs) {
			if other.path != "" && fileout.Same(out.path, other.path) {
				return fmt.Errorf("%s %s is the file of %s: give each output a file of its own", out.flag, out.path, other.flag)
			}
		}
		outs = append(outs, out)
	}
	return nil
}

// writeOutputs writes theta, the look-ahead point, the states asked for
// and the clipped means (--example-grads; clipped holds them as [T, n]),
// each where its flag says. The clipped means come before the noise, so they are not private:
// their file is made readable by its owner alone. Every output keeps the
// mode of a file it replaces where that is narrower (fileout.Write).
func (o *runOptions) writeOutputs(opt *runtime.Optimizer, tn tensors, clipped *npy.Array) error {
	o.warnUnstarted(opt)
	type output struct {
		flag, path string
		perm       fs.FileMode
		a          func() (npy.Array, error)
	}
	outs := []output{
		{"--out", o.out, 0o644, func() (npy.Array, error) { return vector(tn.Params()) }},
		{"--clipped-out", o.ex.clippedOut, 0o600, func() (npy.Array, error) { return *clipped, nil }},
		{"--lookahead-out", o.ex.lookaheadOut, 0o644, func() (npy.Array, error) { return vector(tn.Lookahead()) }},
	}
	for _, s := range o.stateOuts {
		outs = append(outs, output{"--state-out " + s.name, s.path, 0o644, func() (npy.Array, error) { return vector(tn.State(s.name)) }})
	}
	for _, out := range outs {
		if out.path == "" {
			continue
		}
		a, err := out.a()
		if err == nil {
			err = fileout.Write(out.path, out.perm, func(w io.Writer) error { return npy.Write(w, a) })
		}
		if err != nil {
			return fmt.Errorf("%s %s: cannot write: %w", out.flag, out.path, fileout.RootCause(err))
		}
	}
	return nil
}

// vector is data as a [n] array.
func vector(data []float32, err error) (npy.Array, error) {
	return npy.Array{Shape: []int{len(data)}, Data: data}, err
}

// checkOutFile checks, before any work is done, that a file can be put at
// path, given with the flag name: path is not a directory and its
// directory exists.
func checkOutFile(name, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s is a directory; want a file name", name, path)
	}
	target, err := fileout.Target(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, path, err)
	}
	dir := filepath.Dir(target)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: cannot write into directory %s: %w", name, path, dir, fileout.RootCause(err))
	case !st.IsDir():
		return fmt.Errorf("%s %s: %s is not a directory", name, path, dir)
	}
	return nil
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
	default:
		err = checkFiniteTheta(o.theta, theta)
	}
	return theta, grads, err
}

// checkFiniteTheta refuses parameters with a NaN or ±Inf, naming the first:
// the step would carry it into the output, a file that looks like a result.
func checkFiniteTheta(path string, theta npy.Array) error {
	for i, v := range theta.Data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("--theta %s: theta[%d] is %v; the parameters must be finite", path, i, v)
		}
	}
	return nil
}

// readArray reads the .npy file path given with the flag name.
func readArray(name, path string) (npy.Array, error) {
	a, err := npy.ReadFile(path)
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return a, fmt.Errorf("%s: cannot read %s: %w", name, path, pe.Err)
	case err != nil:
		return a, fmt.Errorf("%s %w", name, err) // the error starts with path
	}
	return a, nil
}
