package runtime

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/hostkernel"
)

// This file privatizes per-example gradients (docs/runtime.md,
// "Per-example clipping"): it mixes each example's two gradients as the
// optimizer's observation says, clips every example to norm DP.ClipNorm and
// writes their sum divided by DP.BatchSize (the expected batch size, however
// many examples were drawn) into the gradient buffer, for Step to add the
// noise. The CPU backend runs the kernels' privatize host
// functions on every core (their Go reference where there is no shared
// object), CUDA its privatize kernels; all give the same bits.

// PrivatizeStats describes one privatization.
type PrivatizeStats struct {
	Scales  []float32 // per example given: min(1, C/‖u‖), the factor its gradient was scaled by
	Clipped int       // examples whose norm exceeded C
}

// NonFiniteExampleError reports an example whose squared norm is not
// finite: its gradient holds a NaN or ±Inf, or squares past float32's range.
type NonFiniteExampleError = backend.NonFiniteExampleError

// privJob is one privatization for the backend; its Out nil writes the
// optimizer's gradient buffer.
type privJob = backend.Privatize

// Privatize sets the gradient of the next step to the clipped per-example
// gradients of the batch, summed and divided by DP.BatchSize: cur holds
// ∇f(θ_t; ξ) of k examples, each a row of Len() values (the registered
// tensors in order), k = len(cur)/Len() any whole number — under Poisson
// sampling the examples drawn (0 included: the gradient is then 0), with
// a fixed batch size k = DP.BatchSize; look holds ∇f at the look-ahead
// point (Tensor.Lookahead) for a two-point optimizer (nil will do for no
// examples), nil for the others.
// Each example's u = A·look + (1−A)·cur (A from Observation) is clipped to
// norm DP.ClipNorm; Step then adds the noise. An example with a NaN or ±Inf
// entry makes it return a *NonFiniteExampleError and change nothing.
func (o *Optimizer) Privatize(cur, look []float32) (PrivatizeStats, error) {
	defer o.lock()()
	return o.runJob(o.privJob(cur, look, nil))
}

// PrivatizeTo is Privatize (scales nil) or PrivatizeScaled writing the
// clipped sum over DP.BatchSize into out, on the host, rather than into the
// optimizer's gradient: each example is a row of len(out) values. It serves
// a trainer whose clipping norm spans several optimizers (a binding's
// parameter groups, each an optimizer over a part of one flat gradient,
// which out is): the DP settings and the observation are the receiver's.
func (o *Optimizer) PrivatizeTo(out, cur, look, scales []float32) (PrivatizeStats, error) {
	defer o.lock()()
	if o.opts.Backend.onDevice() {
		return PrivatizeStats{}, fmt.Errorf("runtime: PrivatizeTo writes host memory; a %s optimizer privatizes with Privatize", o.opts.Backend)
	}
	if out == nil {
		out = []float32{}
	}
	j, err := o.privJob(cur, look, out)
	if err != nil || scales == nil {
		return o.runJob(j, err)
	}
	return o.runScaled(j, scales)
}

// PrivatizeScaled is Privatize with the scales given, one per example,
// e.g. by ClipScales: out = Σ_ξ scales[ξ]·u_ξ / DP.BatchSize.
func (o *Optimizer) PrivatizeScaled(cur, look, scales []float32) (PrivatizeStats, error) {
	defer o.lock()()
	j, err := o.privJob(cur, look, nil)
	if err != nil {
		return PrivatizeStats{}, err
	}
	return o.runScaled(j, scales)
}

// runJob runs j unless err.
func (o *Optimizer) runJob(j privJob, err error) (PrivatizeStats, error) {
	if err != nil {
		return PrivatizeStats{}, err
	}
	return o.runPrivatize(j)
}

// runScaled checks the given scales and runs j with them.
func (o *Optimizer) runScaled(j privJob, scales []float32) (PrivatizeStats, error) {
	if err := o.takeScales(scales, j.Batch); err != nil {
		return PrivatizeStats{}, err
	}
	if bad := firstNonFiniteRow(j.N, j.Cur, j.Look); bad >= 0 {
		return PrivatizeStats{}, &NonFiniteExampleError{Example: bad}
	}
	j.Scales = scales
	return o.runPrivatize(j)
}

// takeScales checks given scales — one per example, each in [0, 1]; with
// clip groups one per example and group, group-major — and takes them as
// ClipScales' last (takeGhost).
func (o *Optimizer) takeScales(scales []float32, batch int) error {
	switch g := len(o.dp.Groups); {
	case len(scales) == o.scaleCount(batch):
	case g > 0:
		return fmt.Errorf("runtime: %d scales for %d examples in %d clip groups: want one an example and group, group-major", len(scales), batch, g)
	default:
		return fmt.Errorf("runtime: %d scales for %d examples", len(scales), batch)
	}
	for i, s := range scales {
		if s >= 0 && s <= 1 {
			continue
		}
		if o.dp.Groups != nil {
			return fmt.Errorf("runtime: scale %v of example %d in clip group %d is not in [0, 1]", s, i%batch, i/batch)
		}
		return fmt.Errorf("runtime: scale %v of example %d is not in [0, 1]", s, i)
	}
	return o.takeGhost(scales)
}

// takeGhost checks that scales are those ClipScales returned last, at
// this step, under the clipping and the observation in force, and takes
// them: each set clips one privatization, which takes them even if it
// then fails. Scales made up — all 1, say — or kept from another step
// would let an example's gradient past the norm C the accountant is told,
// silently; the norms given to ClipScales stay the trainer's word.
func (o *Optimizer) takeGhost(scales []float32) error {
	g := o.ghost
	o.ghost = nil
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	if g == nil || g.t != o.t || g.a != o.observation().A || !slices.EqualFunc(g.scales, scales, same) {
		return errors.New("runtime: the scales given are not those ClipScales returned last, at this step: the runtime " +
			"clips only by scales it computed from the examples' norms under the settings in force, each set once")
	}
	return nil
}

// firstNonFiniteRow returns the first example (row of n values) of cur or
// look that holds a NaN or ±Inf, or -1. PrivatizeScaled checks the rows
// themselves: with the scales given no norm is computed to reveal them.
func firstNonFiniteRow(n int, rows ...[]float32) int {
	bad := -1
	for _, r := range rows {
		if i := firstNonFinite(r); i >= 0 && (bad < 0 || i/n < bad) {
			bad = i / n
		}
	}
	return bad
}

// runPrivatize runs j on the backend and marks what it wrote privatized
// (release.go); where j wrote the optimizer's gradient, that clears the
// non-finite marks of SetGrad, as the whole buffer now holds the clipped
// sum over B.
func (o *Optimizer) runPrivatize(j privJob) (PrivatizeStats, error) {
	if o.dp.Groups != nil {
		return o.runGroups(j)
	}
	scales, err := o.back.Privatize(j)
	if err != nil {
		return PrivatizeStats{}, err
	}
	o.markPrivatized(j)
	return statsOf(scales), nil
}

// ghostScales are the scales ClipScales returned last, with the step and
// the observation's weight A they were computed at: a privatization may
// be given them once, at that step and weight (takeGhost).
type ghostScales struct {
	scales []float32
	t      int
	a      float64
}

// markPrivatized marks what the host job j wrote privatized.
func (o *Optimizer) markPrivatized(j privJob) {
	o.privatized(hostRange(o.destination(j.Out)), j.Out == nil)
}

// statsOf describes a privatization by its scales.
func statsOf(scales []float32) PrivatizeStats {
	st := PrivatizeStats{Scales: scales}
	for _, s := range scales {
		if s < 1 {
			st.Clipped++
		}
	}
	return st
}

// privJob checks the arguments of Privatize and picks the mode: one set
// (cur; look where A is 1) or the two-point mix. The job writes into out,
// or into the gradient buffer where out is nil.
func (o *Optimizer) privJob(cur, look, out []float32) (privJob, error) {
	if o.dp == nil {
		return privJob{}, errors.New("runtime: set the DP settings (SetDP) before Privatize: they give C and B")
	}
	if err := o.ready(); err != nil {
		return privJob{}, err
	}
	if err := o.checkGroupLayout(); err != nil {
		return privJob{}, err
	}
	n := len(out)
	if out == nil {
		// Ranges (RegisterRange) without the trainer's host buffers, as Step
		// refuses them: the gradient is the trainer's device memory (the
		// backends rely on this refusal). Ranges of no coordinates have no
		// gradient to write.
		if o.hasRanges() && !o.callerBuffers && o.n > 0 {
			return privJob{}, fmt.Errorf("runtime: Privatize: the gradient of %s is the trainer's device memory (RegisterRange): privatize into it with PrivatizeDevice", o.Name())
		}
		n = o.n
	}
	k, err := privRows(cur, n)
	if err != nil {
		return privJob{}, err
	}
	if look != nil && len(look) != len(cur) {
		return privJob{}, fmt.Errorf("runtime: look holds %d values, cur %d", len(look), len(cur))
	}
	j, lookOnly, err := o.privShape(k, n, look != nil)
	if err != nil {
		return privJob{}, err
	}
	j.Cur, j.Look = rowsRead(j, lookOnly, cur, look)
	j.Out = out // nil: the gradient buffer
	return j, nil
}

// rowsRead picks the rows a job reads, host slices or device pointers:
// the look rows alone where A is 1, both in the two-point mix (mode 1),
// else cur alone (the zero value for look: not read).
func rowsRead[R any](j backend.Privatize, lookOnly bool, cur, look R) (R, R) {
	var none R
	switch {
	case lookOnly:
		return look, none
	case j.Mode == 1:
		return cur, look
	}
	return cur, none
}

// privShape checks a privatization of k examples of n values, with or
// without look-ahead rows, against the DP settings and the observation, and
// returns its job without rows; lookOnly says the look rows are the one
// set to read (A = 1).
func (o *Optimizer) privShape(k, n int, hasLook bool) (_ backend.Privatize, lookOnly bool, _ error) {
	divisor, err := o.privDivisor()
	if err != nil {
		return backend.Privatize{}, false, err
	}
	j := backend.Privatize{Batch: k, N: n, Clip: o.dp.ClipNorm, Divisor: divisor}
	obs := o.observation()
	switch {
	case hasLook && obs.Kind != "two_point":
		return backend.Privatize{}, false, fmt.Errorf("runtime: %s has no two-point observation: pass look = nil", o.Name())
	case !hasLook && obs.Kind == "two_point" && obs.A != 0 && k > 0:
		return backend.Privatize{}, false, fmt.Errorf("runtime: %s observes two points (a = %v): pass the gradients at the look-ahead point too", o.Name(), obs.A)
	case !hasLook || obs.A == 0:
		return j, false, nil
	case obs.A == 1:
		return j, true, nil
	}
	j.Mode, j.A, j.B = 1, float32(obs.A), float32(1-obs.A)
	return j, false, nil
}

// maxPrivBatch is the largest DP.BatchSize that Privatize divides by:
// float32 holds every whole number up to 2^24 exactly.
const maxPrivBatch = 1 << 24

// privDivisor returns the divisor of the clipped sum, float32(DP.BatchSize),
// refusing a batch size that float32 would round.
func (o *Optimizer) privDivisor() (float32, error) {
	if o.dp.BatchSize > maxPrivBatch {
		return 0, fmt.Errorf("runtime: Privatize divides by float32(B), exact up to 2^24 = %d; DP.BatchSize %d is larger", maxPrivBatch, o.dp.BatchSize)
	}
	return float32(o.dp.BatchSize), nil
}

// privRows returns the number of examples of cur, rows of n values.
func privRows(cur []float32, n int) (int, error) {
	switch {
	case n == 0 && len(cur) == 0:
		return 0, nil
	case n == 0 || len(cur)%n != 0:
		return 0, fmt.Errorf("runtime: cur holds %d values, not a whole number of examples of %d", len(cur), n)
	}
	return len(cur) / n, nil
}

// ClipScales returns the per-example clipping scales of ghost clipping,
// for a trainer that computes the norms itself (docs/runtime.md): curNorm
// holds ‖∇f(θ_t; ξ)‖ of the k examples given (any number, as for
// Privatize); for a two-point optimizer
// lookNorm holds ‖∇f(look; ξ)‖ and dot ⟨∇f(look; ξ), ∇f(θ_t; ξ)⟩ (else
// both nil). The mixed norm² = A²‖look‖² + 2A(1−A)⟨look, cur⟩ + (1−A)²‖cur‖²
// is computed in float64 and clamped at 0, the scale is
// float32(min(1, C/sqrt(norm²))), 1 for norm² = 0. A norm that is not
// finite gives a *NonFiniteExampleError.
func (o *Optimizer) ClipScales(lookNorm, curNorm, dot []float64) ([]float32, error) {
	defer o.lock()()
	if o.dp == nil {
		return nil, errors.New("runtime: set the DP settings (SetDP) before ClipScales: they give C and B")
	}
	obs := o.observation()
	switch {
	case (lookNorm == nil) != (dot == nil):
		return nil, errors.New("runtime: ClipScales takes lookNorm and dot together")
	case lookNorm != nil && (len(lookNorm) != len(curNorm) || len(dot) != len(curNorm)):
		return nil, fmt.Errorf("runtime: %d look norms and %d inner products for %d examples", len(lookNorm), len(dot), len(curNorm))
	case lookNorm != nil && obs.Kind != "two_point":
		return nil, fmt.Errorf("runtime: %s has no two-point observation: pass lookNorm = dot = nil", o.Name())
	case lookNorm == nil && obs.Kind == "two_point" && obs.A != 0 && len(curNorm) > 0:
		return nil, fmt.Errorf("runtime: %s observes two points (a = %v): the clipped norm is that of the mix, so pass lookNorm and dot too", o.Name(), obs.A)
	}
	for _, norms := range [][]float64{lookNorm, curNorm} {
		for ex, v := range norms {
			if v < 0 {
				return nil, fmt.Errorf("runtime: the norm %v of example %d is negative", v, ex)
			}
		}
	}
	scales, err := o.clipScales(lookNorm, curNorm, dot, obs.A)
	if err == nil {
		o.ghost = &ghostScales{scales: slices.Clone(scales), t: o.t, a: obs.A} // the caller's copy may change
	}
	return scales, err
}

// clipScales is reduce.ClipScales of the norms under the DP settings: one
// clipping norm, or group g's for the norms [g·k, (g+1)·k).
func (o *Optimizer) clipScales(lookNorm, curNorm, dot []float64, a float64) ([]float32, error) {
	scales := make([]float32, len(curNorm))
	groups := o.dp.Groups
	if groups == nil {
		groups = []ClipGroup{{ClipNorm: o.dp.ClipNorm}}
	}
	if len(curNorm)%len(groups) != 0 {
		return nil, fmt.Errorf("runtime: %d norms for %d clip groups: want one an example and group, group-major", len(curNorm), len(groups))
	}
	k := len(curNorm) / len(groups)
	for g, grp := range groups {
		at := func(v []float64) []float64 { return v[min(len(v), g*k):min(len(v), (g+1)*k)] }
		if bad := reduce.ClipScales(scales[g*k:(g+1)*k], at(lookNorm), at(curNorm), at(dot), a, grp.ClipNorm); bad >= 0 {
			err := &NonFiniteExampleError{Example: bad, Given: true}
			if o.dp.Groups != nil {
				return nil, &groupError{group: g, err: err}
			}
			return nil, err
		}
	}
	return scales, nil
}

// groupError is err, about clip group group's values.
type groupError struct {
	group int
	err   error
}

func (e *groupError) Error() string {
	return fmt.Sprintf("runtime: clip group %d: %s", e.group, strings.TrimPrefix(e.err.Error(), "runtime: "))
}

func (e *groupError) Unwrap() error { return e.err }

// privatize runs j on the host: through the shared object's privatize
// functions, split over the cores, else through the Go reference.
func (b *cpuBackend) Privatize(j backend.Privatize) ([]float32, error) {
	if j.Device != nil {
		return nil, fmt.Errorf("runtime: the %s backend has no device memory", b.Name())
	}
	if err := b.openPrivatize(); err != nil {
		return nil, err
	}
	if j.Out == nil {
		j.Out = b.bufs[ir.GradBuffer].F32
	}
	if j.Segments != nil {
		return b.privatizeSegments(j)
	}
	args := privArgs(j)
	args.Cur, args.Look = j.Cur, j.Look
	if args.Scales == nil {
		nchunks := reduce.ReduceChunks(j.N)
		if err := b.clipScales(&args, j.Batch, func() error {
			return b.split(j.Batch*nchunks, 1, func(lo, hi int) error { return b.privPhase(0, args, lo, hi) })
		}); err != nil {
			return nil, err
		}
	}
	if err := b.split(j.N, 4096, func(lo, hi int) error { return b.privPhase(2, args, lo, hi) }); err != nil {
		return nil, err
	}
	return args.Scales, nil
}

// privArgs are the host functions' arguments of j but its rows.
func privArgs(j backend.Privatize) hostkernel.PrivatizeArgs {
	return hostkernel.PrivatizeArgs{Scales: j.Scales, Out: j.Out, Batch: int64(j.Batch), N: int64(j.N),
		Clip: j.Clip, A: j.A, B: j.B, Divisor: j.Divisor, Mode: j.Mode}
}

// clipScales gives args the partials and scales of batch examples, runs
// norms (which fills the partials), then the scales phase, and refuses an
// example whose norm is not finite.
func (b *cpuBackend) clipScales(args *hostkernel.PrivatizeArgs, batch int, norms func() error) error {
	args.Partials, args.Scales = b.partialsFor(batch*reduce.ReduceChunks(int(args.N))), make([]float32, batch)
	if err := norms(); err != nil {
		return err
	}
	if err := b.privPhase(1, *args, 0, batch); err != nil {
		return err
	}
	if bad := backend.FirstNaN(args.Scales); bad >= 0 {
		return &NonFiniteExampleError{Example: bad}
	}
	return nil
}

// partialsFor returns n norm partials, those of the last privatization
// where they are enough.
func (b *cpuBackend) partialsFor(n int) []float32 {
	if cap(b.partials) < n {
		b.partials = make([]float32, n)
	}
	return b.partials[:n]
}

// privPhase runs phase 0 (norms), 1 (scales) or 2 (sum) over [lo, hi).
func (b *cpuBackend) privPhase(phase int, a hostkernel.PrivatizeArgs, lo, hi int) error {
	a.Lo, a.Hi = int64(lo), int64(hi)
	if b.priv != nil {
		return [3]func(hostkernel.PrivatizeArgs) error{b.priv.Norms, b.priv.Scales, b.priv.Sum}[phase](a)
	}
	privReference(phase, a)
	return nil
}

// split runs f on at most b.threads pieces of [0, n), each at least least
// long, at once (one piece on the caller's goroutine), and returns their
// errors joined.
func (b *cpuBackend) split(n, least int, f func(lo, hi int) error) error {
	return parallelChunks(n, max((n+b.threads-1)/b.threads, least), f)
}

// openPrivatize loads the privatize host functions of the shared object
// the step kernel came from, once; the Go backend and a shared object
// built before they existed use the Go reference.
func (b *cpuBackend) openPrivatize() error {
	if b.priv != nil || b.kernel == nil || b.so == "" || b.privSyms == nil {
		return nil
	}
	p, err := hostkernel.OpenPrivatize(b.so, b.privSyms)
	if err != nil {
		return fmt.Errorf("runtime: %w (rebuild it with fibergen build)", err)
	}
	b.priv = p
	return nil
}

// privatizeSymbols returns the manifest's privatize host functions, nil
// where it lists none.
func privatizeSymbols(o *Optimizer) []string {
	p := o.m.Kernels.Privatize
	if p == nil {
		return nil
	}
	if p.HostPiece == "" {
		return p.HostFunctions
	}
	return append(slices.Clip(p.HostFunctions), p.HostPiece)
}
