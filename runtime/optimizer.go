package runtime

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/backend"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// Backend says where Step runs.
type Backend string

// The backends. CPU runs the host kernel, built by fibergen build as
// <name>.so next to the manifest, on every core; without it, Open is an
// error unless Options.GoFallback asks for the reference instead. Go is the
// reference: the IR interpreter (or, from OpenPackage, the generated Go
// package), bit-identical with the kernels, also on every core. CUDA runs
// the PTX kernel on an NVIDIA GPU (package runtime/cuda). PTXSim runs the
// same PTX kernel, through the same code, on a simulated device
// (internal/cudasim: the PTX simulator behind a CUDA driver written in Go),
// thousands of times slower than a GPU: for checking a kernel where there
// is none; its driver is given in Options.Driver, since the runtime does not
// link the simulator (the tests and cmd/fibergen wire it in). All give the
// same bits.
const (
	CPU    Backend = "cpu"
	Go     Backend = "go"
	CUDA   Backend = "cuda"
	PTXSim Backend = "ptxsim"
)

// onDevice reports whether b runs the PTX kernel: on a GPU or simulated.
func (b Backend) onDevice() bool { return b == CUDA || b == PTXSim }

// Options configure Open.
type Options struct {
	Backend Backend // CPU when empty
	Threads int     // CPU and Go: goroutines per step; 0: GOMAXPROCS
	Device  int     // CUDA: the device ordinal
	// Driver is the CUDA driver of Backend CUDA and PTXSim: nil loads
	// NVIDIA's (libcuda.so.1, cudadrv.Load); PTXSim needs the driver of a
	// simulated device (internal/cudasim.New), which the runtime does not
	// link.
	Driver *cudadrv.Driver
	// Offset is the global index of this optimizer's first coordinate, for
	// a trainer that shards one flat parameter vector over workers
	// (ZeRO/FSDP-style): each shard then draws exactly the noise a single
	// optimizer over the whole vector would draw there.
	Offset uint64
	// AllowExtrapolation opts in to a two_point mixing weight a outside
	// [0, 1], which SetHyper and Step otherwise refuse with an
	// *ir.ExtrapolationError: the observation would extrapolate past the
	// two gradients and could inflate each example's gradient before
	// clipping (FiBeR paper, Appendix F).
	AllowExtrapolation bool
	// GoFallback lets Backend CPU run the reference (Backend Go) where there
	// is no host kernel to load, instead of failing at Open; Backend then
	// says which runs.
	GoFallback bool
	// AllowGradientReuse lets Step run on a gradient it has already stepped
	// on, which it otherwise refuses: a gradient needs a new privatization
	// or write between two steps (release.go), since a second step on one
	// batch's gradient releases it twice, with new noise, and the privacy
	// accounting counts it once. The first step on a gradient is checked
	// as always. It is for benchmarks and tests, never for DP training.
	AllowGradientReuse bool
	// AllowResumeAgain lets Load and LoadFrom resume a checkpoint that was
	// resumed before, which they otherwise refuse (ErrResumed): two runs
	// resumed from one checkpoint draw the same noise on different
	// gradients. It is for a trainer that knows the earlier resume
	// released nothing, and for tests; Load then writes no record.
	AllowResumeAgain bool
	// StateDir holds this machine's record of the checkpoints resumed
	// (resume.go), in StateDir/resumed; "": $FIBERGEN_STATE_DIR, else
	// $XDG_STATE_HOME/fibergen, else ~/.local/state/fibergen.
	StateDir string
	// AllowUnstable lets the hypers make a state grow without bound — a
	// filter such as c = rho*c + g at rho > 1, which SetHyper and Step
	// otherwise refuse with its spectral radius and stability region — for
	// a researcher who studies it. The filters that attenuation needs must
	// stay stable whatever this says.
	AllowUnstable bool
	// NoClampWarning turns off the clamp warning (diag.go): for an
	// optimizer whose corrected second moment has a fixed floor (fiber's
	// eps_v), the runtime samples clamp_mass every 10th step and warns
	// once, through Warnings, when it stays above ClampWarnThreshold.
	NoClampWarning bool
	// SecureNoise draws the DP noise in the secure scheme (rng.SecureVersion,
	// docs/noise.md): ChaCha20 keyed by a 256-bit secret that Open draws
	// from the operating system (Open fails where it cannot: there is no
	// weaker fallback), the noise snapped to a grid. It takes no seed
	// (SetSeed refuses one), and its checkpoints hold no key: a resumed run
	// draws under a key derived from its own (Load). Without it the noise is
	// the default scheme's, Philox keyed by a 64-bit seed (rng.Version).
	SecureNoise bool
}

// DP is the privacy setting of a step: the clipped-mean gradient gets
// Gaussian noise of standard deviation sigma_w = NoiseMultiplier·C/BatchSize
// per coordinate, C the sensitivity (ClipNorm, or with Groups √Σ C_g²).
type DP struct {
	ClipNorm        float64 // C, the per-example clipping norm (0 with Groups)
	NoiseMultiplier float64 // σ_DP
	BatchSize       int     // B, examples per step
	// Groups, where set, clip each example per group instead of as one:
	// group g's coordinates to norm C_g (clipgroups.go). The groups tile
	// the gradient's global coordinates in order.
	Groups []ClipGroup
	// ProportionalNoise gives each group noise in proportion to its C_g,
	// σ_DP·√G·C_g/B, instead of every group σ_DP·√Σ C_g²/B; both are one
	// Gaussian mechanism of multiplier σ_DP. Groups only.
	ProportionalNoise bool
}

// SigmaW2 is the noise variance per coordinate, (σ_DP·C/B)², C the
// sensitivity; with ProportionalNoise, that of a group of norm C/√G.
func (d DP) SigmaW2() float64 {
	s := d.NoiseMultiplier * d.Sensitivity() / float64(d.BatchSize)
	return s * s
}

func (d DP) check() error {
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
	if d.ProportionalNoise && d.Groups == nil {
		return errors.New("runtime: DP.ProportionalNoise shares the noise among clip groups: set DP.Groups")
	}
	if d.Groups != nil {
		if err := checkGroups(d.ClipNorm, d.Groups); err != nil {
			return err
		}
	}
	if !ok(d.Sensitivity()) || !(d.NoiseMultiplier >= 0) || math.IsInf(d.NoiseMultiplier, 0) || d.BatchSize <= 0 {
		return fmt.Errorf("runtime: DP settings C = %v, σ_DP = %v, B = %d: want C > 0, σ_DP >= 0 (finite) and B >= 1", d.Sensitivity(), d.NoiseMultiplier, d.BatchSize)
	}
	if slices.ContainsFunc(d.variances(), func(s float64) bool { return math.IsInf(s, 0) }) {
		return fmt.Errorf("runtime: DP settings C = %v, σ_DP = %v, B = %d give a noise variance σ_w² = (σ_DP·C/B)² too large for a float64", d.Sensitivity(), d.NoiseMultiplier, d.BatchSize)
	}
	return nil
}

// variances are the noise variances σ_w² of the clip groups (GroupSigmaW2;
// one without groups).
func (d DP) variances() []float64 {
	out := make([]float64, max(len(d.Groups), 1))
	for g := range out {
		out[g] = d.GroupSigmaW2(g)
	}
	return out
}

// drawsNone says whether the settings give some coordinates no noise at
// all: σ_w² = 0 in a group (σ_DP = 0, or a variance that underflows).
func (d DP) drawsNone() bool { return slices.Contains(d.variances(), 0) }

// Noise is the noise of the next steps given directly, instead of by DP
// settings (SetNoise).
type Noise struct {
	SigmaW2 float64 `json:"sigma_w2"` // σ_w², the noise variance per coordinate, which the host scalars read
	// Draw says that the kernel draws N(0, σ_w²) into the gradient; without
	// it, the gradient set with SetGrad is privatized already.
	Draw bool `json:"draw"`
}

func (n Noise) check() error {
	if !(n.SigmaW2 >= 0) || math.IsInf(n.SigmaW2, 0) {
		return fmt.Errorf("runtime: noise variance σ_w² = %v: want a finite value >= 0", n.SigmaW2)
	}
	return nil
}

// Optimizer is one generated optimizer over the trainer's parameters: the
// flat buffers of every role (parameters, gradient, each state), the
// hypers, the DP settings, the seed and the step counter. Its methods (and
// its Tensors') run one at a time, so that goroutines sharing it never take
// two steps at one step counter; a trainer's privatize-then-step is two
// calls, which a trainer stepping from several goroutines keeps together.
type Optimizer struct {
	m     *manifest.Manifest
	hash  string // manifest.Hash of the manifest's bytes
	files kernelFiles
	opts  Options
	prog  *interp.Program
	// storages are the buffers' storage (ir.Storage), in ABI order: a
	// state may hold 16-bit values (backend.Host).
	storages []ir.Storage
	hypers   []float64
	set      map[string]bool // the hypers set (SetHyper, ApplySettings): no longer derived (ir.Func.Derive)
	dp       *DP             // SetDP
	noise    *Noise          // SetNoise; nil when dp gives the noise
	seed     uint64
	mode     rng.Mode // the noise scheme of a drawing step: rng.Philox, or rng.Secure (Options.SecureNoise)
	key      rng.Key  // rng.Secure's key: from the OS at Open, or SetKey; rekeyed at each Load
	loads    uint64   // the checkpoints loaded, which label the keys a secure load derives
	t        int
	fault    error // a step that failed part-way (backend.FaultError); cleared by Load
	tensors  []*Tensor
	n        int
	bufs     []backend.Host // theta, g, states (ABI order, ir.ThetaBuffer…); host copies, or the caller's (UseBuffers)
	// callerBuffers: bufs are the trainer's memory (UseBuffers), which
	// checkpoints leave to the trainer.
	callerBuffers bool
	// grad is where the gradient of the trainer's buffers came from;
	// lastPriv is the last privatization made, adopted the one adopted for
	// the next step, consumed the latest generation of each optimizer's
	// stepped on (release.go); id names the optimizer in them.
	grad     gradMark
	lastPriv privRecord
	adopted  adoption
	consumed map[uint64]uint64
	id       uint64
	back     backend.Backend
	budget   *Budget                   // SetBudget: the accountant and the planned steps
	diag     *diagState                // EnableDiagnostics: nil while they are off
	watch    *clampWatch               // the clamp warning's samples; nil: no fixed floor, or Options.NoClampWarning
	warnings []string                  // the warnings not yet taken (Warnings)
	segs     []Segment                 // PrivatizeSegmentsTo's segments as its job reads them, kept between calls
	ghost    *ghostScales              // ClipScales' last, not yet taken (takeGhost)
	red      reduceState               // the reduction pass's (reduce.go)
	lines    map[linesKey]*tensorLines // each tensor's line states, Func.LineStates order (lines.go)
	// linesMade are the line states the step being made made, the
	// optimizer's once it runs (commitLines).
	linesMade map[linesKey]*tensorLines
	mu        sync.Mutex // held by every method but the immutable Name, Manifest, ManifestHash (lock)
}

// lock serialises the optimizer's methods: an Optimizer is safe for use by
// several goroutines, one call at a time, so that no two steps can read one
// step counter and draw the same noise. Methods lock on entry and call only
// unexported code, never another locking method. defer o.lock()() holds the
// lock to the method's end.
func (o *Optimizer) lock() func() {
	o.mu.Lock()
	return o.mu.Unlock
}

// Open opens the optimizer that fibergen build wrote into dir
// (generated/<name>): it reads <name>.json and, for the CPU backend,
// <name>.so, or for CUDA <name>.ptx. The seed is drawn from crypto/rand;
// SetSeed fixes it. In secure mode (Options.SecureNoise) the key is drawn
// from the operating system instead, and Open fails where it cannot be.
func Open(dir string, opts Options) (*Optimizer, error) {
	name := filepath.Base(filepath.Clean(dir))
	m, data, err := manifest.Read(filepath.Join(dir, name+".json"))
	if err != nil {
		return nil, err
	}
	var files kernelFiles
	if m.Kernels.PTX != "" {
		files.ptxPath = filepath.Join(dir, m.Kernels.PTX)
	}
	if so := filepath.Join(dir, m.Kernels.SharedObject); m.Kernels.SharedObject != "" && fileExists(so) {
		files.so = so
	}
	return open(m, data, files, opts)
}

// Compiled is an optimizer compiled in this process (pipeline.Compile),
// held in memory: its manifest and the kernels built from its module.
type Compiled struct {
	Manifest     []byte
	SharedObject string // the host kernel's shared object, for Backend CPU; "" if none
	PTX          []byte // the PTX module, for Backend CUDA; nil if none
}

// OpenCompiled opens an optimizer compiled in this process, as Open opens
// the files fibergen build wrote.
func OpenCompiled(c Compiled, opts Options) (*Optimizer, error) {
	m, err := manifest.Decode(c.Manifest)
	if err != nil {
		return nil, fmt.Errorf("runtime: OpenCompiled: %w", err)
	}
	return open(m, c.Manifest, kernelFiles{so: c.SharedObject, ptx: c.PTX}, opts)
}

// kernelFiles locate an optimizer's compiled kernels.
type kernelFiles struct {
	so      string   // the host kernel's shared object; "" if none
	goStep  StepFunc // OpenPackage: the generated package's step, which the CPU backend runs without a shared object
	ptx     []byte   // the PTX module, given in memory
	ptxPath string   // else its file; "" if none
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// StepFunc is a generated package's StepKernel: the step over the
// coordinates [lo, hi) of bufs with the kernels' scalar arguments.
// mode is the noise's rng.Mode (0: none), seed Philox's, key the secure
// scheme's.
type StepFunc func(bufs [][]float32, scalars []float32, lo, hi int, offset uint64, mode uint32, seed uint64, key [4]uint64, step uint32)

// Package is a generated Go package compiled into the trainer, e.g.
// runtime.Package{Manifest: fiber.Manifest(), Step: fiber.StepKernel}.
type Package struct {
	Manifest []byte
	Step     StepFunc
}

// OpenPackage opens a generated package compiled into the program: its steps
// run the package's Go code on every core (Backend CPU or Go), with no kernel
// file and no LLVM. For the host kernel or CUDA, use Open on the package's
// directory.
func OpenPackage(p Package, opts Options) (*Optimizer, error) {
	if opts.Backend.onDevice() {
		return nil, fmt.Errorf("runtime: OpenPackage runs the Go code; open the package's directory with Open for %s", opts.Backend)
	}
	if p.Step == nil {
		return nil, errors.New("runtime: OpenPackage needs the package's StepKernel")
	}
	m, err := manifest.Decode(p.Manifest)
	if err != nil {
		return nil, fmt.Errorf("runtime: OpenPackage: %w", err)
	}
	return open(m, p.Manifest, kernelFiles{goStep: p.Step}, opts)
}

func open(m *manifest.Manifest, data []byte, files kernelFiles, opts Options) (*Optimizer, error) {
	fn, err := m.Func()
	if err != nil {
		return nil, err
	}
	if err := checkBuild(m, files); err != nil {
		return nil, err
	}
	if opts.AllowUnstable {
		fn.DropBoundedFilters()
	}
	p, err := interp.New(fn)
	if err != nil {
		return nil, err
	}
	if opts.Backend == "" {
		opts.Backend = CPU
	}
	if !slices.Contains([]Backend{CPU, Go, CUDA, PTXSim}, opts.Backend) {
		return nil, fmt.Errorf("runtime: unknown backend %q (want cpu, go, cuda or ptxsim)", opts.Backend)
	}
	if err := checkLinesBackend(fn, opts.Backend); err != nil {
		return nil, err
	}
	if opts.Backend == CPU && files.so == "" && files.goStep == nil && !opts.GoFallback {
		return nil, fmt.Errorf("runtime: %s has no host kernel %s to run on the CPU: build it with fibergen build (it needs LLVM 14), "+
			"or open it with Backend Go, the reference (Options.GoFallback runs the reference where the kernel is missing)", m.Optimizer, m.Kernels.SharedObject)
	}
	o := &Optimizer{m: m, hash: manifest.Hash(data), files: files, opts: opts, prog: p, storages: storagesOf(fn),
		hypers: fn.DefaultHypers(), mode: rng.Philox, id: optimizerIDs.Add(1), red: reduceState{readsGrad: fn.ReduceReadsGradient()}}
	if opts.SecureNoise {
		if o.key, err = randomKey(); err != nil {
			return nil, fmt.Errorf("runtime: open %s with secure noise: %w (a secure run takes its key from the operating system alone)", m.Optimizer, err)
		}
		o.mode = rng.Secure // no seed: the Philox seed stays 0, and means nothing
	} else {
		o.seed = rng.RandomSeed()
	}
	if !opts.NoClampWarning {
		o.watch = newClampWatch(fn)
	}
	return o, nil
}

// Name is the optimizer's name.
func (o *Optimizer) Name() string { return o.m.Optimizer }

// Manifest is the optimizer's manifest.
func (o *Optimizer) Manifest() *manifest.Manifest { return o.m }

// Backend is the backend steps run on, once the first step has chosen it
// (CPU runs Go where Options.GoFallback asked for it and there is no host
// kernel); "" before.
func (o *Optimizer) Backend() Backend {
	defer o.lock()()
	if o.back == nil {
		return ""
	}
	return Backend(o.back.Name())
}

// Len is the number of coordinates registered.
func (o *Optimizer) Len() int {
	defer o.lock()()
	return o.n
}

// Steps is the number of steps taken: the next step is step Steps().
func (o *Optimizer) Steps() int {
	defer o.lock()()
	return o.t
}

// Seed is the noise seed; 0 in secure mode (Options.SecureNoise), which
// takes a key and no seed.
func (o *Optimizer) Seed() uint64 {
	defer o.lock()()
	return o.seed
}

// errSecureSeed is SetSeed's refusal in secure mode.
var errSecureSeed = errors.New("runtime: secure noise takes no seed: its key comes from the operating system, since a seed " +
	"that anyone knows or can guess makes every step's noise recomputable, and so subtractable from the released parameters " +
	"(a reproducible run draws in the default philox mode)")

// SetSeed fixes the noise seed; only before the first step, and never in
// secure mode (Options.SecureNoise), which refuses it: its key comes from
// the operating system, since anyone who knows the seed of a run can
// recompute its noise and subtract it.
func (o *Optimizer) SetSeed(seed uint64) error {
	defer o.lock()()
	if o.mode == rng.Secure {
		return errSecureSeed
	}
	if o.t > 0 {
		return errors.New("runtime: the seed can only be set before the first step")
	}
	o.seed = seed
	return nil
}

// randomKey draws a secure key at Open; the tests replace it to fail as
// the operating system's source can.
var randomKey = rng.RandomKey

// NoiseMode is the scheme a drawing step draws its noise in — rng.Philox,
// or rng.Secure (Options.SecureNoise) — and that scheme's version string
// (rng.Version, rng.SecureVersion).
func (o *Optimizer) NoiseMode() (rng.Mode, string) {
	return o.mode, o.mode.Scheme() // fixed at Open: no lock
}

// keyFixed says why the secure key can no longer be shared or set: a step
// has drawn with it, or a load derived the next one; nil where it can.
func (o *Optimizer) keyFixed(what string) error {
	switch {
	case o.mode != rng.Secure:
		return fmt.Errorf("runtime: %s: %s draws philox noise, which has a seed and no key (open with Options.SecureNoise for secure noise)", what, o.Name())
	case o.t > 0:
		return fmt.Errorf("runtime: %s: only before the first step (Steps() = %d): the key has drawn noise", what, o.t)
	case o.loads > 0:
		return fmt.Errorf("runtime: %s: only before a checkpoint is loaded: the load derived the resumed run's key from it (agree on the key first, then load on every rank)", what)
	}
	return nil
}

// ShareKey returns the secure key, for the ranks of one sharded run to
// agree on it (SetKey) before the first step, so that every shard draws
// the noise one optimizer over the whole vector would draw: for that
// alone. The key is the run's secret — whoever holds it can subtract the
// noise from what the run releases — so it must travel only between the
// ranks' processes, and never into a log, a file or a message. It is
// refused in philox mode, after the first step and after a Load.
func (o *Optimizer) ShareKey() (rng.Key, error) {
	defer o.lock()()
	if err := o.keyFixed("ShareKey"); err != nil {
		return rng.Key{}, err
	}
	return o.key, nil
}

// SetKey sets the secure key to another rank's (ShareKey), for the ranks
// of one sharded run to agree on it; it is for that alone, and refused in
// philox mode, after the first step, after a Load, and for the zero key
// (which no operating system's source gives, and anyone can guess).
func (o *Optimizer) SetKey(k rng.Key) error {
	defer o.lock()()
	if err := o.keyFixed("SetKey"); err != nil {
		return err
	}
	if k == (rng.Key{}) {
		return errors.New("runtime: SetKey: the zero key: a secure key is another rank's, from ShareKey, never one made up")
	}
	o.key = k
	return nil
}

// SetDP sets the DP settings of the next steps; under a privacy budget
// (SetBudget) it is refused, since the budget's accounting assumes its own.
func (o *Optimizer) SetDP(d DP) error {
	defer o.lock()()
	if err := d.check(); err != nil {
		return err
	}
	if o.budget != nil {
		return errors.New("runtime: a privacy budget (SetBudget) sets the DP settings; other settings would spend what it does not account for")
	}
	d.Groups = slices.Clone(d.Groups) // the caller's slice stays the caller's
	old := o.dp
	o.dp, o.noise = &d, nil
	o.dpChanged(old)
	o.warnNoNoise()
	return nil
}

// warnNoNoise queues a warning (Warnings) where the noise settings just
// made draw nothing: every step would release its gradient as it is.
func (o *Optimizer) warnNoNoise() {
	var what string
	switch {
	case o.dp != nil && o.dp.drawsNone():
		what = fmt.Sprintf("DP settings of noise multiplier σ_DP = %v give σ_w² = 0", o.dp.NoiseMultiplier)
	case o.noise != nil && o.noise.Draw && o.noise.SigmaW2 == 0:
		what = "the noise given directly (SetNoise) has σ_w² = 0"
	default:
		return
	}
	o.warn(what + ": the steps add no DP noise, so the output is not private (ε = ∞)")
}

// warn queues the warning w (Warnings) unless it is queued already: a
// caller that makes the same settings every step and never takes the
// warnings keeps one.
func (o *Optimizer) warn(w string) {
	if !slices.Contains(o.warnings, w) {
		o.warnings = append(o.warnings, w)
	}
}

// DP returns the DP settings, and false where none are set (SetNoise gives
// the noise, or nothing does yet).
func (o *Optimizer) DP() (DP, bool) {
	defer o.lock()()
	if o.dp == nil {
		return DP{}, false
	}
	d := *o.dp
	d.Groups = slices.Clone(d.Groups)
	return d, true
}

// SetNoise sets the noise of the next steps directly, instead of by DP
// settings: for replaying recorded clipped means with a known σ_w², and for
// a trainer that privatizes its gradients itself (Draw false). Privatize,
// ClipScales and the privacy budget need SetDP, which gives C and B.
func (o *Optimizer) SetNoise(n Noise) error {
	defer o.lock()()
	if err := n.check(); err != nil {
		return err
	}
	if o.budget != nil {
		return errors.New("runtime: a privacy budget (SetBudget) sets the noise from DP settings; SetNoise would bypass it")
	}
	old := o.dp
	o.noise, o.dp = &n, nil
	o.dpChanged(old)
	o.warnNoNoise()
	return nil
}

// stepNoise is the noise of the next step: σ_w² and whether the kernel
// draws it.
func (o *Optimizer) stepNoise() Noise {
	if o.noise != nil {
		return *o.noise
	}
	return Noise{SigmaW2: o.dp.SigmaW2(), Draw: true}
}

// noiseMode is the noise scheme a step draws in: none unless draw.
func (o *Optimizer) noiseMode(draw bool) rng.Mode {
	if !draw {
		return rng.Off
	}
	return o.mode
}

// Hypers returns every hyper's name and current value, in the order the
// .dsl declares them.
func (o *Optimizer) Hypers() []Hyper {
	defer o.lock()()
	out := make([]Hyper, len(o.hypers))
	for i, h := range o.prog.Func.Hypers {
		out[i] = Hyper{Name: h.Name, Value: o.hypers[i], Alias: h.Alias}
	}
	return out
}

// Attenuation is the DP-noise attenuation of a filtered state: the share of
// the noise variance σ_w² that reaches it (docs/dsl.md, attenuation).
type Attenuation struct {
	State  string  `json:"state"`
	Steady float64 `json:"steady"` // attenuation(state) at the current hypers
	// Finite is attenuation_t(state) after the steps taken, 0 before the
	// first; nil for a filter that starts otherwise at step 0 (a state
	// declared `= g`: ir.Filter.Start), whose finite-time gain is not
	// derived, and for a time-varying filter, whose Steady is its limit's
	// (ir.Filter.Limit) and whose attenuation_t is a scalar of the step.
	Finite *float64 `json:"finite"`
}

// Attenuations returns the attenuation of every state the optimizer's step
// names in attenuation or attenuation_t, as the host computes them for a
// step at the current hypers.
func (o *Optimizer) Attenuations() []Attenuation {
	defer o.lock()()
	out := make([]Attenuation, 0, len(o.prog.Func.Filters))
	for _, fl := range o.prog.Func.Filters {
		if fl.Bounded { // checked for growth only: no attenuation names it
			continue
		}
		steady, finite, _ := o.prog.Attenuation(fl.State, o.hypers, o.t-1)
		a := Attenuation{State: fl.State, Steady: steady, Finite: &finite}
		if !fl.HasFiniteGain() {
			a.Finite = nil
		}
		out = append(out, a)
	}
	return out
}

// Hyper is a hyper's name and value, and in Optimizer.Hypers its alias
// (docs/dsl.md): the name a binding accepts besides Name.
type Hyper struct {
	Name  string    `json:"name"`
	Value float64   `json:"value"`
	Alias *ir.Alias `json:"alias,omitempty"`
}

// ManifestHash is manifest.Hash of the manifest the optimizer was opened
// from: the build its checkpoints are bound to.
func (o *Optimizer) ManifestHash() string { return o.hash }

// Hyper returns the value of the named hyper.
func (o *Optimizer) Hyper(name string) (float64, error) {
	defer o.lock()()
	i := o.prog.Func.HyperIndex(name)
	if i < 0 {
		return 0, o.noHyper(name)
	}
	return o.hypers[i], nil
}

// SetHyper sets the named hyper for the next steps, checking its range, the
// stability of the filters and the two_point weight at the new setting.
func (o *Optimizer) SetHyper(name string, value float64) error {
	defer o.lock()()
	return o.setHypers(map[string]float64{name: value})
}

// SetHypers sets several hypers at once, checking the new setting as a
// whole (one at a time, a step between two stable settings may be
// unstable); on an error nothing changes.
func (o *Optimizer) SetHypers(values map[string]float64) error {
	defer o.lock()()
	return o.setHypers(values)
}

func (o *Optimizer) setHypers(values map[string]float64) error {
	h, set, err := o.prog.Func.Assign(o.hypers, o.set, values)
	if err == nil {
		err = errors.Join(o.prog.Check(h), o.checkNoiseFixed(h))
	}
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	ts, err := o.tensorSettings(h, set)
	if err := errors.Join(o.checkObservation(h), err); err != nil {
		return err
	}
	o.takeHypers(h, set, ts)
	return nil
}

// checkNoiseFixed refuses hypers h that change a noise block's filter
// after the first step or under a privacy budget: the run's sensitivity
// is that of one filter, the one the budget's accountant was told.
func (o *Optimizer) checkNoiseFixed(h []float64) error {
	switch {
	case o.prog.Func.SameNoise(o.hypers, h):
		return nil
	case o.budget != nil:
		return errors.New("the noise filter cannot change under a privacy budget (SetBudget): the accountant was told its factorization's sensitivity")
	case o.t > 0:
		return fmt.Errorf("the noise filter cannot change after the first step (%d taken): the factorization's sensitivity is that of one filter over the whole run", o.t)
	}
	return nil
}

// ApplySettings sets hypers from "name=value" settings as a command line
// gives them, in order, checking each range and then the new setting as a
// whole as SetHypers does; the error wraps the setting's own.
func (o *Optimizer) ApplySettings(settings []string) error {
	defer o.lock()()
	h, set, err := o.prog.Func.Settle(o.hypers, settings, o.set)
	if err == nil {
		err = errors.Join(o.prog.CheckValues(h), o.checkNoiseFixed(h))
	}
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	ts, err := o.tensorSettings(h, set)
	if err := errors.Join(o.checkObservation(h), err); err != nil {
		return err
	}
	o.takeHypers(h, set, ts)
	return nil
}

// checkObservation refuses a two_point mixing weight outside [0, 1] at the
// next step unless Options.AllowExtrapolation.
func (o *Optimizer) checkObservation(h []float64) error {
	if err := o.prog.Func.CheckObservationFinite(h, o.t); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if o.opts.AllowExtrapolation {
		return nil
	}
	if err := o.prog.Func.CheckObservation(h, o.t); err != nil {
		return fmt.Errorf("runtime: %w (Options.AllowExtrapolation)", err)
	}
	return nil
}

func (o *Optimizer) noHyper(name string) error {
	return fmt.Errorf("runtime: %w", o.prog.Func.NoHyper(name))
}

// Register adds a parameter tensor, copying its values into the flat
// parameter buffer; all tensors are registered before the first step.
func (o *Optimizer) Register(name string, params []float32) (*Tensor, error) {
	defer o.lock()()
	if o.bufs != nil {
		return nil, fmt.Errorf("runtime: register %s: tensors are registered before the first step", name)
	}
	if err := o.registered(name); err != nil {
		return nil, err
	}
	if o.hasRanges() {
		return nil, fmt.Errorf("runtime: register %s: %s has ranges of the trainer's buffers (RegisterRange), which tensors with values do not mix with", name, o.Name())
	}
	return o.addTensor(&Tensor{Name: name, Len: len(params), init: slices.Clone(params)}), nil
}

// registered refuses a name that a tensor has already (Register,
// RegisterRange).
func (o *Optimizer) registered(name string) error {
	if slices.ContainsFunc(o.tensors, func(t *Tensor) bool { return t.Name == name }) {
		return fmt.Errorf("runtime: tensor %s is registered already", name)
	}
	return nil
}

// addTensor adds t, of t.Len coordinates, after the tensors registered
// already.
func (o *Optimizer) addTensor(t *Tensor) *Tensor {
	t.Offset, t.o, t.bad = o.n, o, -1
	o.tensors = append(o.tensors, t)
	o.n += t.Len
	return t
}

// Tensors lists the registered tensors in order.
func (o *Optimizer) Tensors() []*Tensor {
	defer o.lock()()
	return slices.Clone(o.tensors)
}

// placeParams writes the registered tensors' parameters into theta, each
// rounded to nearest where the kernels store them narrower than float32.
func (o *Optimizer) placeParams(theta backend.Host) {
	for _, t := range o.tensors {
		theta.SetRounded(t.Offset, t.init)
	}
}

// ready lays out the flat buffers and starts the backend, once.
func (o *Optimizer) ready() error {
	if o.back != nil {
		return nil
	}
	if o.bufs == nil {
		if o.hasRanges() && !o.opts.Backend.onDevice() {
			return fmt.Errorf("runtime: %s: %w", o.Name(), errRangesNeedBuffers)
		}
		o.bufs = o.newHostBuffers(o.ownBufferLen())
		if o.ownBufferLen() > 0 {
			o.placeParams(o.bufs[ir.ThetaBuffer])
			for _, t := range o.tensors {
				t.init = nil
			}
			if err := o.initStates(o.bufs[ir.FirstState:]); err != nil {
				return err
			}
		}
	}
	b, err := o.newBackend()
	if err != nil {
		return err
	}
	o.back = b
	return nil
}

// args computes the arguments of the next step: the segments of the
// buffers by their hypers (one without per-tensor hypers) and the step's
// noise.
func (o *Optimizer) args() backend.Step {
	return o.argsOver(o.n, int64(o.opts.Offset), o.tensors)
}

// argsOver are the arguments of the next step over n coordinates, the
// first at global index offset, cut at the tensors ts.
func (o *Optimizer) argsOver(n int, offset int64, ts []*Tensor) backend.Step {
	noise := o.stepNoise()
	segs := []segment{{Hi: n}} // reduced cuts a step with reductions or lines at its tensors, with their scalars
	if !o.stepsPerTensor() {
		segs = o.segments(n, o.noiseRanges(n, offset), ts)
	}
	return backend.Step{Segments: segs, Offset: offset,
		Noise: rng.Stream{Mode: o.noiseMode(noise.Draw), Seed: o.seed, Key: o.key, Step: uint32(o.t)}}
}

// Step runs one step on the gradients set with Tensor.SetGrad (the clipped
// mean gradient of the batch), drawing the DP noise in the kernel (unless
// SetNoise says the gradient is privatized already). If a
// gradient entry is NaN or ±Inf it changes nothing — parameters, states,
// step counter, noise position — and returns a *NonFiniteError; any other
// error also leaves the step counter where it was.
func (o *Optimizer) Step() error {
	defer o.lock()()
	if err := o.canStep(); err != nil {
		return err
	}
	if o.hasRanges() && !o.callerBuffers {
		return fmt.Errorf("runtime: Step: %s: %w", o.Name(), errRangesNeedBuffers)
	}
	if err := o.ready(); err != nil {
		return err
	}
	if err := o.checkGradient(); err != nil {
		return err
	}
	a, err := o.reduced(backend.Memory{}, o.args())
	if err != nil {
		return err
	}
	if err := o.stepOn(backend.Memory{}, a); err != nil {
		return err
	}
	o.commitLines(a)
	o.t++
	o.released()
	if err := o.runDiagnostics(backend.Memory{}, a); err != nil {
		return fmt.Errorf("runtime: step %d ran, but its diagnostics failed: %w", o.t-1, err)
	}
	return nil
}

// stepOn runs the step a on the memory m, and remembers a failure after
// the backend began changing buffers (a *backend.FaultError), on which
// canStep refuses every further step until Load.
func (o *Optimizer) stepOn(m backend.Memory, a backend.Step) error {
	err := o.back.Step(m, a)
	if fault := (*backend.FaultError)(nil); errors.As(err, &fault) {
		o.fault = fault
	}
	return err
}

// canStep reports what keeps the next step from running: no DP settings
// and no noise given, a
// step the noise counter cannot hold, a spent privacy budget.
func (o *Optimizer) canStep() error {
	if o.fault != nil {
		return fmt.Errorf("runtime: %s: an earlier step failed part-way, and the buffers may hold part of it: load a checkpoint (Load) before stepping again: %w", o.Name(), o.fault)
	}
	if o.dp == nil && o.noise == nil {
		return errors.New("runtime: set the DP settings (SetDP), or the noise itself (SetNoise), before the first step")
	}
	if err := rng.CheckStep(o.t); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if err := o.checkObservation(o.hypers); err != nil {
		return err
	}
	if err := o.checkVarying(); err != nil {
		return err
	}
	if err := o.checkGroupLayout(); err != nil {
		return err
	}
	return o.checkBudget()
}

// checkVarying refuses the next step where a time-varying filter would
// grow at it, at any setting of the hypers in use (Options.AllowUnstable
// drops the check).
func (o *Optimizer) checkVarying() error {
	settings := [][]float64{o.hypers}
	for _, t := range o.tensors { // each setting once: a binding's group gives every parameter its hypers
		if t.hypers != nil && !slices.ContainsFunc(settings, func(h []float64) bool { return slices.Equal(h, t.hypers) }) {
			settings = append(settings, t.hypers)
		}
	}
	for _, sigmaW2 := range o.noiseVariances() {
		for _, h := range settings {
			if err := o.prog.CheckVarying(h, o.t, sigmaW2); err != nil {
				return fmt.Errorf("runtime: step %d refused, nothing changed: %w (Options.AllowUnstable)", o.t, err)
			}
		}
	}
	return nil
}

// NonFiniteError reports a gradient entry that is NaN or ±Inf.
type NonFiniteError struct {
	Tensor string
	Index  int // within the tensor
	Value  float32
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("runtime: gradient of %s[%d] is %v: step skipped, nothing changed", e.Tensor, e.Index, e.Value)
}

// checkGradients reports the first non-finite gradient entry that SetGrad
// saw, in tensor order: the check runs while SetGrad copies the gradient in,
// so a step reads the gradient once.
func (o *Optimizer) checkGradients() error {
	for _, t := range o.tensors {
		if t.bad >= 0 {
			return &NonFiniteError{Tensor: t.Name, Index: t.bad, Value: t.badValue}
		}
	}
	return nil
}

// Close releases the backend (device memory, the shared object).
func (o *Optimizer) Close() error {
	defer o.lock()()
	o.stopBudget()
	if o.back == nil {
		return nil
	}
	err := o.back.Close()
	o.back = nil
	return err
}

// Observation is how the trainer forms each example's gradient for the next
// step, before clipping. For Kind "two_point" (FiBeR, DiSK) it is
// u = A·∇f(θ_t + Lookahead·(θ_t − θ_{t−1}); ξ) + (1−A)·∇f(θ_t; ξ); for Kind ""
// the plain per-example gradient ∇f(θ_t; ξ).
type Observation struct {
	Kind         string
	A, Lookahead float64
}

// Observation returns the observation of the next step at the current
// hypers. Tensor.Lookahead gives the point where the trainer evaluates the
// look-ahead gradients.
func (o *Optimizer) Observation() Observation {
	defer o.lock()()
	return o.observation()
}

func (o *Optimizer) observation() Observation {
	fn := o.prog.Func
	if fn.Observe == nil {
		return Observation{}
	}
	obs := Observation{Kind: fn.Observe.Kind}
	vals := o.prog.Observe(o.hypers, o.t)
	for i, name := range fn.Observe.Args {
		switch name {
		case "a":
			obs.A = vals[i]
		case "lookahead":
			obs.Lookahead = vals[i]
		}
	}
	return obs
}
