package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/npy"
)

// exampleOptions are the flags of run's per-example mode: the run clips and
// averages per-example gradients itself, through the runtime's privatize
// kernels, and draws the noise of σ_w = σ_DP·C/B, σ_DP given explicitly
// (--noise off: σ_DP = 0).
type exampleOptions struct {
	examples, lookahead string         // --example-grads, --lookahead-grads: [T, B, n]
	clip, multiplier    floatFlag      // --clip C, --noise-multiplier σ_DP
	clipGroups          clipGroupsFlag // --clip-groups N:C,...: per-group clipping instead of --clip
	proportional        bool           // --proportional-noise
	clippedOut          string         // --clipped-out: the clipped means [T, n]
	lookaheadOut        string         // --lookahead-out: the final look-ahead point [n]
}

// clipGroupsFlag is --clip-groups N:C[,N:C...]: per-group clipping, each
// group the next N coordinates of theta, clipped to C (runtime.DP.Groups).
type clipGroupsFlag []runtime.ClipGroup

func (l *clipGroupsFlag) String() string {
	parts := make([]string, len(*l))
	for i, g := range *l {
		parts[i] = fmt.Sprintf("%d:%v", g.Size, g.ClipNorm)
	}
	return strings.Join(parts, ",")
}

func (l *clipGroupsFlag) Set(s string) error {
	var groups []runtime.ClipGroup
	for _, f := range strings.Split(s, ",") {
		size, clip, ok := strings.Cut(f, ":")
		n, err1 := strconv.Atoi(size)
		c, err2 := strconv.ParseFloat(clip, 64)
		if !ok || err1 != nil || err2 != nil || n <= 0 || !(c > 0) || math.IsInf(c, 0) {
			return errors.New("want N:C[,N:C...], each N a whole number > 0 and C a finite number > 0")
		}
		groups = append(groups, runtime.ClipGroup{Size: n, ClipNorm: c})
	}
	*l = groups
	return nil
}

// cuts are where the clip groups end, from 0.
func (l clipGroupsFlag) cuts() []int {
	var out []int
	at := 0
	for _, g := range l {
		at += g.Size
		out = append(out, at)
	}
	return out
}

// validateExamples checks the per-example flags against the others; given
// lists the flags set on the command line. It returns a message or "".
func (o *runOptions) validateExamples(given map[string]bool) string {
	e := &o.ex
	if e.examples == "" {
		for _, f := range []string{"lookahead-grads", "clip", "clip-groups", "proportional-noise", "noise-multiplier", "clipped-out"} {
			if given[f] {
				return fmt.Sprintf("--%s works only with --example-grads", f)
			}
		}
		return ""
	}
	switch {
	case o.grads != "":
		return "--grads and --example-grads are alternatives: give the clipped means or the per-example gradients"
	case given["clip"] && given["clip-groups"]:
		return "--clip and --clip-groups are alternatives: one norm, or one a group"
	case given["clip-groups"] && o.backend == "ptxsim":
		return "--clip-groups with --backend ptxsim: the device privatizes each group's rows as a matrix of their own, and run holds one matrix; use --backend go or cpu"
	case e.proportional && !given["clip-groups"]:
		return "--proportional-noise shares the noise among clip groups: give --clip-groups"
	case !given["clip-groups"] && (!(e.clip > 0) || math.IsInf(float64(e.clip), 0)):
		return fmt.Sprintf("--example-grads needs --clip C with C > 0 finite (got %v), or --clip-groups", float64(e.clip))
	case given["sigma-w2"]:
		return "with --example-grads the noise variance is (σ_DP·C/B)²: give --noise-multiplier, not --sigma-w2"
	case o.noise == "off" && given["noise-multiplier"]:
		return "--noise off and --noise-multiplier are alternatives: give --noise-multiplier S, or --noise off for no noise (not private)"
	case o.noise == "on" && !given["noise-multiplier"]:
		return "--example-grads needs the noise given explicitly: --noise-multiplier S (σ_DP), or --noise off for no noise (not private)"
	case !(e.multiplier >= 0) || math.IsInf(float64(e.multiplier), 0):
		return fmt.Sprintf("--noise-multiplier %v: want a finite value >= 0", float64(e.multiplier))
	}
	return ""
}

// executeExamples runs the steps as a DP trainer does: Privatize clips and
// averages each step's per-example gradients, Step adds the noise of
// σ_w = σ_DP·C/B.
func (o *runOptions) executeExamples(opt *runtime.Optimizer, in runArrays, stderr io.Writer) error {
	theta, cur, look := in.theta, in.cur, in.look
	// Every step privatizes B rows, a fixed-size batch, so Privatize's
	// divisor (the expected batch size) is the number of rows.
	dp := runtime.DP{ClipNorm: float64(o.ex.clip), NoiseMultiplier: float64(o.ex.multiplier), BatchSize: cur.Shape[1]}
	if o.ex.clipGroups != nil {
		dp.ClipNorm, dp.Groups, dp.ProportionalNoise = 0, o.ex.clipGroups, o.ex.proportional
	}
	if err := opt.SetDP(dp); err != nil {
		return err
	}
	if err := checkLookahead(opt, look.Data != nil); err != nil {
		return err
	}
	o.warnNoNoise(opt, stderr)
	tn, err := o.start(opt, theta, o.ex.multiplier > 0, stderr)
	if err != nil {
		return err
	}
	clipped, err := o.stepExamples(opt, tn, cur, look)
	if err != nil {
		return err
	}
	return o.writeOutputs(opt, tn, &clipped)
}

// checkLookahead says, in the command's terms, when --lookahead-grads is
// given for an optimizer without a two-point observation or missing for
// one with it.
func checkLookahead(opt *runtime.Optimizer, given bool) error {
	obs := opt.Observation()
	switch {
	case given && obs.Kind != "two_point":
		return fmt.Errorf("--lookahead-grads: %s has no two-point observation (each example's gradient is taken at theta alone): leave --lookahead-grads out", opt.Name())
	case !given && obs.Kind == "two_point" && obs.A != 0:
		return fmt.Errorf("--lookahead-grads: %s observes two points (a = %v): give the per-example gradients at the look-ahead point too", opt.Name(), obs.A)
	}
	return nil
}

// readExamples reads theta [n] and the per-example gradients [T, B, n].
func (o *runOptions) readExamples() (theta, cur, look npy.Array, err error) {
	if theta, err = readArray("--theta", o.theta); err != nil {
		return
	}
	if theta.Rank() != 1 {
		return theta, cur, look, fmt.Errorf("--theta %s has shape %s; want a vector [n]", o.theta, npy.FormatShape(theta.Shape))
	}
	if err = checkFiniteTheta(o.theta, theta); err != nil {
		return
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

// stepExamples privatizes and steps once per step of cur; it returns the
// clipped means [T, n], filled when --clipped-out asks for them.
func (o *runOptions) stepExamples(opt *runtime.Optimizer, tn tensors, cur, look npy.Array) (npy.Array, error) {
	steps, rows := cur.Shape[0], cur.Shape[1]*cur.Shape[2]
	clipped := npy.Array{Shape: []int{steps, cur.Shape[2]}}
	for t := range steps {
		var l []float32
		if look.Data != nil {
			l = look.Data[t*rows : (t+1)*rows]
		}
		if _, err := opt.Privatize(cur.Data[t*rows:(t+1)*rows], l); err != nil {
			return clipped, stepError(t, steps, err)
		}
		if o.ex.clippedOut != "" {
			g, err := tn.Grad()
			if err != nil {
				return clipped, stepError(t, steps, err)
			}
			clipped.Data = append(clipped.Data, g...)
		}
		if err := o.step(opt, t); err != nil {
			return clipped, stepError(t, steps, err)
		}
	}
	return clipped, nil
}
