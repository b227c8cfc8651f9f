package tests

import (
	"fmt"
	"sync"
	"testing"

	"github.com/fibergen/fibergen/generated/abtrack"
	"github.com/fibergen/fibergen/generated/ademamix"
	"github.com/fibergen/fibergen/generated/blt_adam"
	"github.com/fibergen/fibergen/generated/blt_sgd"
	"github.com/fibergen/fibergen/generated/disk"
	"github.com/fibergen/fibergen/generated/disk_corr"
	"github.com/fibergen/fibergen/generated/doppler"
	"github.com/fibergen/fibergen/generated/dp_adam"
	"github.com/fibergen/fibergen/generated/dp_adambc"
	"github.com/fibergen/fibergen/generated/dp_adamw"
	"github.com/fibergen/fibergen/generated/dp_adamw_bf16"
	"github.com/fibergen/fibergen/generated/dp_lion"
	"github.com/fibergen/fibergen/generated/dp_sgd"
	"github.com/fibergen/fibergen/generated/fiber"
	"github.com/fibergen/fibergen/generated/fiber_bccorr"
	"github.com/fibergen/fibergen/generated/fiber_bf16"
	"github.com/fibergen/fibergen/generated/fiber_cosine"
	"github.com/fibergen/fibergen/generated/fiber_ft"
	"github.com/fibergen/fibergen/generated/fiber_nfloor"
	"github.com/fibergen/fibergen/generated/fiber_nocorr"
	"github.com/fibergen/fibergen/generated/fiber_rfloor"
	"github.com/fibergen/fibergen/generated/schedule_free"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/tests/oracle"
)

// setting overrides one hyper, by its DSL name.
type setting struct {
	name  string
	value float64
}

// implementation is a generated optimizer package behind one interface.
type implementation interface {
	Update(theta, g []float32, sigmaW2 float64) error
	States() [][]float32 // the live state buffers, in DSL order
}

// reference is an oracle optimizer behind one interface.
type reference interface {
	Step(theta, g []float64, sigmaW2 float64)
	States() [][]float64 // the live state buffers, in DSL order
	SetT(t int)          // sets the index of the next step
}

// optimizer ties a shipped optimizer's generated package to its oracle and
// to its step in error-bound arithmetic.
type optimizer struct {
	name    string   // the DSL's optimizer name and the generated package
	states  []string // the DSL's states, in order
	newImpl func(sets []setting, n int) (implementation, error)
	newRef  func(sets []setting, n int) (reference, bounded, error)
	pkg     goPackage
	// noise marks a noise block: the oracle tests let the implementation
	// draw the correlated noise (noiseDrawer) and hand the oracle and the
	// bound the same draws (noiseReader, noisyBounded).
	noise bool

	sqrtOnce sync.Once // reads the manifest's IR for sqrtStates
	sqrtFn   *ir.Func
	sqrtErr  error
}

// goPackage holds a generated package's Defaults, NewHost and Step, which
// the kernel tests call through reflection (tests/kernels_test.go), and
// its privatize references.
type goPackage struct {
	defaults, newHost, step any
	priv                    privRef
}

// optimizers lists every optimizers/*.dsl; TestOptimizersRegistered checks
// that none is missing.
var optimizers = []*optimizer{
	{name: "fiber", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberImpl, newRef: newFiberRef, pkg: goPackage{fiber.Defaults, fiber.NewHost, fiber.Step, privRef{fiber.PrivatizeNorms, fiber.PrivatizeScales, fiber.PrivatizeSum}}},
	{name: "disk", states: []string{"gt", "m", "v", "lookahead"}, newImpl: newDiskImpl, newRef: newDiskRef, pkg: goPackage{disk.Defaults, disk.NewHost, disk.Step, privRef{disk.PrivatizeNorms, disk.PrivatizeScales, disk.PrivatizeSum}}},
	{name: "disk_corr", states: []string{"gt", "m", "v", "lookahead"}, newImpl: newDiskCorrImpl, newRef: newDiskCorrRef, pkg: goPackage{disk_corr.Defaults, disk_corr.NewHost, disk_corr.Step, privRef{disk_corr.PrivatizeNorms, disk_corr.PrivatizeScales, disk_corr.PrivatizeSum}}},
	{name: "abtrack", states: []string{"gt", "s", "m", "v"}, newImpl: newABTrackImpl, newRef: newABTrackRef, pkg: goPackage{abtrack.Defaults, abtrack.NewHost, abtrack.Step, privRef{abtrack.PrivatizeNorms, abtrack.PrivatizeScales, abtrack.PrivatizeSum}}},
	{name: "dp_adamw", states: []string{"m", "v"}, newImpl: newAdamWImpl, newRef: newAdamWRef, pkg: goPackage{dp_adamw.Defaults, dp_adamw.NewHost, dp_adamw.Step, privRef{dp_adamw.PrivatizeNorms, dp_adamw.PrivatizeScales, dp_adamw.PrivatizeSum}}},
	{name: "dp_adamw_bf16", states: []string{"m", "v"}, newImpl: newAdamWBF16Impl, newRef: newAdamWBF16Ref, pkg: goPackage{dp_adamw_bf16.Defaults, dp_adamw_bf16.NewHost, dp_adamw_bf16.Step, privRef{dp_adamw_bf16.PrivatizeNorms, dp_adamw_bf16.PrivatizeScales, dp_adamw_bf16.PrivatizeSum}}},
	{name: "fiber_bf16", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberBF16Impl, newRef: newFiberBF16Ref, pkg: goPackage{fiber_bf16.Defaults, fiber_bf16.NewHost, fiber_bf16.Step, privRef{fiber_bf16.PrivatizeNorms, fiber_bf16.PrivatizeScales, fiber_bf16.PrivatizeSum}}},
	{name: "dp_sgd", states: nil, newImpl: newSGDImpl, newRef: newSGDRef, pkg: goPackage{dp_sgd.Defaults, dp_sgd.NewHost, dp_sgd.Step, privRef{dp_sgd.PrivatizeNorms, dp_sgd.PrivatizeScales, dp_sgd.PrivatizeSum}}},
	{name: "dp_adam", states: []string{"m", "v"}, newImpl: newAdamImpl, newRef: newAdamRef, pkg: goPackage{dp_adam.Defaults, dp_adam.NewHost, dp_adam.Step, privRef{dp_adam.PrivatizeNorms, dp_adam.PrivatizeScales, dp_adam.PrivatizeSum}}},
	{name: "dp_adambc", states: []string{"m", "v"}, newImpl: newAdamBCImpl, newRef: newAdamBCRef, pkg: goPackage{dp_adambc.Defaults, dp_adambc.NewHost, dp_adambc.Step, privRef{dp_adambc.PrivatizeNorms, dp_adambc.PrivatizeScales, dp_adambc.PrivatizeSum}}},
	{name: "fiber_nocorr", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberNoCorrImpl, newRef: newFiberNoCorrRef, pkg: goPackage{fiber_nocorr.Defaults, fiber_nocorr.NewHost, fiber_nocorr.Step, privRef{fiber_nocorr.PrivatizeNorms, fiber_nocorr.PrivatizeScales, fiber_nocorr.PrivatizeSum}}},
	{name: "fiber_bccorr", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberBCCorrImpl, newRef: newFiberBCCorrRef, pkg: goPackage{fiber_bccorr.Defaults, fiber_bccorr.NewHost, fiber_bccorr.Step, privRef{fiber_bccorr.PrivatizeNorms, fiber_bccorr.PrivatizeScales, fiber_bccorr.PrivatizeSum}}},
	{name: "fiber_ft", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberFTImpl, newRef: newFiberFTRef, pkg: goPackage{fiber_ft.Defaults, fiber_ft.NewHost, fiber_ft.Step, privRef{fiber_ft.PrivatizeNorms, fiber_ft.PrivatizeScales, fiber_ft.PrivatizeSum}}},
	{name: "doppler", states: []string{"y", "y1", "g1", "m", "v"}, newImpl: newDopplerImpl, newRef: newDopplerRef, pkg: goPackage{doppler.Defaults, doppler.NewHost, doppler.Step, privRef{doppler.PrivatizeNorms, doppler.PrivatizeScales, doppler.PrivatizeSum}}},
	{name: "dp_lion", states: []string{"m"}, newImpl: newLionImpl, newRef: newLionRef, pkg: goPackage{dp_lion.Defaults, dp_lion.NewHost, dp_lion.Step, privRef{dp_lion.PrivatizeNorms, dp_lion.PrivatizeScales, dp_lion.PrivatizeSum}}},
	{name: "fiber_nfloor", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberNFloorImpl, newRef: newFiberNFloorRef, pkg: goPackage{fiber_nfloor.Defaults, fiber_nfloor.NewHost, fiber_nfloor.Step, privRef{fiber_nfloor.PrivatizeNorms, fiber_nfloor.PrivatizeScales, fiber_nfloor.PrivatizeSum}}},
	{name: "fiber_rfloor", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberRFloorImpl, newRef: newFiberRFloorRef, pkg: goPackage{fiber_rfloor.Defaults, fiber_rfloor.NewHost, fiber_rfloor.Step, privRef{fiber_rfloor.PrivatizeNorms, fiber_rfloor.PrivatizeScales, fiber_rfloor.PrivatizeSum}}},
	{name: "schedule_free", states: []string{"z", "x", "v"}, newImpl: newScheduleFreeImpl, newRef: newScheduleFreeRef, pkg: goPackage{schedule_free.Defaults, schedule_free.NewHost, schedule_free.Step, privRef{schedule_free.PrivatizeNorms, schedule_free.PrivatizeScales, schedule_free.PrivatizeSum}}},
	{name: "ademamix", states: []string{"m1", "m2", "v"}, newImpl: newAdEMAMixImpl, newRef: newAdEMAMixRef, pkg: goPackage{ademamix.Defaults, ademamix.NewHost, ademamix.Step, privRef{ademamix.PrivatizeNorms, ademamix.PrivatizeScales, ademamix.PrivatizeSum}}},
	{name: "fiber_cosine", states: []string{"gt", "r", "m", "v", "lookahead"}, newImpl: newFiberCosineImpl, newRef: newFiberCosineRef, pkg: goPackage{fiber_cosine.Defaults, fiber_cosine.NewHost, fiber_cosine.Step, privRef{fiber_cosine.PrivatizeNorms, fiber_cosine.PrivatizeScales, fiber_cosine.PrivatizeSum}}},
	{name: "blt_sgd", states: []string{"m", "s1", "s2"}, newImpl: newBLTSGDImpl, newRef: newBLTSGDRef, noise: true, pkg: goPackage{blt_sgd.Defaults, blt_sgd.NewHost, blt_sgd.Step, privRef{blt_sgd.PrivatizeNorms, blt_sgd.PrivatizeScales, blt_sgd.PrivatizeSum}}},
	{name: "blt_adam", states: []string{"m", "v", "s1", "s2"}, newImpl: newBLTAdamImpl, newRef: newBLTAdamRef, noise: true, pkg: goPackage{blt_adam.Defaults, blt_adam.NewHost, blt_adam.Step, privRef{blt_adam.PrivatizeNorms, blt_adam.PrivatizeScales, blt_adam.PrivatizeSum}}},
}

// noiseDrawer is the implementation of a correlated-noise optimizer, whose
// noise block privatizes g itself: drawNoise makes it draw the noise (g is
// then the clipped mean gradient) in Philox mode under seed.
type noiseDrawer interface{ drawNoise(seed uint64) }

// noiseReader is the oracle of a correlated-noise optimizer: readNoise
// hands it the implementation's standard normal draws, z of coordinate i
// at step t.
type noiseReader interface {
	readNoise(draw func(t, i int) float64)
}

// fn is opt's IR, read from its checked-in manifest.
func (opt *optimizer) fn(t testing.TB) *ir.Func {
	t.Helper()
	opt.sqrtOnce.Do(func() {
		m, _, err := manifest.Read(repoPath("generated", opt.name, opt.name+".json"))
		if err == nil {
			opt.sqrtFn, err = m.Func()
		}
		opt.sqrtErr = err
	})
	if opt.sqrtErr != nil {
		t.Fatal(opt.sqrtErr)
	}
	return opt.sqrtFn
}

// narrow reports whether opt stores a state as a 16-bit type: the
// float32 harnesses of the kernels cannot hold it, and storage_test.go's
// typed harness runs it (TestStorageShipped).
func (opt *optimizer) narrow(t testing.TB) bool { return len(opt.fn(t).NarrowBuffers()) > 0 }

// sqrtStates reports, for each of opt's states, whether the step takes a
// square root of a value computed from it (a second moment), as the
// checked-in manifest's IR says.
func (opt *optimizer) sqrtStates(t testing.TB) []bool {
	t.Helper()
	opt.fn(t)
	under, seen := map[string]bool{}, map[*ir.Value]bool{}
	for _, v := range opt.sqrtFn.Step.Values {
		if v.Op == ir.OpSqrt {
			loadsUnder(v, under, seen)
		}
	}
	var out []bool
	for _, s := range opt.states {
		out = append(out, under[s])
	}
	return out
}

// loadsUnder adds to names the buffers whose loads v is computed from.
func loadsUnder(v *ir.Value, names map[string]bool, seen map[*ir.Value]bool) {
	if seen[v] {
		return
	}
	seen[v] = true
	if v.Op == ir.OpLoad {
		names[v.Name] = true
	}
	for _, a := range v.Args {
		loadsUnder(a, names, seen)
	}
}

func optimizerNamed(name string) *optimizer {
	for _, o := range optimizers {
		if o.name == name {
			return o
		}
	}
	return nil
}

// applySets calls set (a generated Hypers.Set) for every setting.
func applySets(set func(string, float64) error, sets []setting) error {
	for _, s := range sets {
		if err := set(s.name, s.value); err != nil {
			return err
		}
	}
	return nil
}

// setFields applies sets to an oracle's hyper fields, named as in the DSL.
func setFields(fields map[string]*float64, sets []setting) error {
	for _, s := range sets {
		p, ok := fields[s.name]
		if !ok {
			return fmt.Errorf("the oracle has no hyper %s", s.name)
		}
		*p = s.value
	}
	return nil
}

func adamWFields(h *oracle.AdamW) map[string]*float64 {
	return map[string]*float64{"lr": &h.Lr, "beta1": &h.Beta1, "beta2": &h.Beta2, "eps": &h.Eps, "wd": &h.Wd}
}

type fiberImpl struct{ *fiber.Optimizer }

func (o fiberImpl) States() [][]float32 { return [][]float32{o.Gt, o.R, o.M, o.V, o.Lookahead} }

func newFiberImpl(sets []setting, n int) (implementation, error) {
	h := fiber.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberImpl{o}, nil
}

type fiberRef struct{ *oracle.FiBeR }

func (o fiberRef) States() [][]float64 { return [][]float64{o.G, o.R, o.M, o.V, o.Lookahead} }
func (o fiberRef) SetT(t int)          { o.T = t }

func fiberHypers(sets []setting) (oracle.FiBeRHypers, error) {
	h, _, err := fiberFloorHypers(sets, "", 0)
	return h, err
}

// fiberFloorHypers is fiberHypers with one more hyper, extra (κ_v or ρ,
// default def; "" for none), returned beside FiBeR's.
func fiberFloorHypers(sets []setting, extra string, def float64) (oracle.FiBeRHypers, float64, error) {
	h, k := oracle.DefaultFiBeR(), def
	fields := adamWFields(&h.AdamW)
	fields["kappa"], fields["gamma"], fields["omega"], fields["eps_v"] = &h.Kappa, &h.Gamma, &h.Omega, &h.EpsV
	if extra != "" {
		fields[extra] = &k
	}
	return h, k, setFields(fields, sets)
}

func newFiberRef(sets []setting, n int) (reference, bounded, error) {
	h, err := fiberHypers(sets)
	if err != nil {
		return nil, nil, err
	}
	return fiberRef{oracle.NewFiBeR(h, n)}, newFiberBound(h), nil
}

type fiberBF16Impl struct{ *fiber_bf16.Optimizer }

func (o fiberBF16Impl) States() [][]float32 { return [][]float32{o.Gt, o.R, o.M, o.V, o.Lookahead} }

func newFiberBF16Impl(sets []setting, n int) (implementation, error) {
	h := fiber_bf16.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_bf16.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberBF16Impl{o}, nil
}

// newFiberBF16Ref is FiBeR's oracle, whose bound adds the rounding of every
// state but the look-ahead point to bfloat16 at every store: the filter's
// (g̃, r) inside its error recursion, m and v after the step.
func newFiberBF16Ref(sets []setting, n int) (reference, bounded, error) {
	h, err := fiberHypers(sets)
	if err != nil {
		return nil, nil, err
	}
	b := newFiberBound(h)
	b.store = uBF16
	return fiberRef{oracle.NewFiBeR(h, n)}, storedBound{b, []int{2, 3}}, nil
}

type fiberCosineImpl struct{ *fiber_cosine.Optimizer }

func (o fiberCosineImpl) States() [][]float32 { return [][]float32{o.Gt, o.R, o.M, o.V, o.Lookahead} }

func newFiberCosineImpl(sets []setting, n int) (implementation, error) {
	h := fiber_cosine.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_cosine.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberCosineImpl{o}, nil
}

type fiberCosineRef struct{ oracle.FiBeRCosine }

func (o fiberCosineRef) States() [][]float64 { return [][]float64{o.G, o.R, o.M, o.V, o.Lookahead} }
func (o fiberCosineRef) SetT(t int)          { o.T = t }

// newFiberCosineRef is FiBeR's oracle and bound with the learning rate of
// oracle.CosineSchedule, whose defaults are fiber_cosine.dsl's.
func newFiberCosineRef(sets []setting, n int) (reference, bounded, error) {
	s := oracle.CosineSchedule{Lr: 1e-3, Warmup: 100, Steps: 10000}
	var rest []setting
	minSet := false
	for _, x := range sets {
		if p, ok := map[string]*float64{"lr": &s.Lr, "lr_min": &s.LrMin, "warmup": &s.Warmup, "steps": &s.Steps}[x.name]; ok {
			*p, minSet = x.value, minSet || x.name == "lr_min"
		} else {
			rest = append(rest, x)
		}
	}
	if !minSet {
		s.LrMin = s.Lr / 100 // the DSL's default lr_min = lr / 100
	}
	h, err := fiberHypers(rest)
	if err != nil {
		return nil, nil, err
	}
	return fiberCosineRef{oracle.FiBeRCosine{FiBeR: oracle.NewFiBeR(h, n), Schedule: s}}, scheduledBound{newFiberBound(h), s}, nil
}

type diskImpl struct{ *disk.Optimizer }

func (o diskImpl) States() [][]float32 { return [][]float32{o.Gt, o.M, o.V, o.Lookahead} }

func newDiskImpl(sets []setting, n int) (implementation, error) {
	h := disk.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := disk.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return diskImpl{o}, nil
}

type diskRef struct{ *oracle.DiSK }

func (o diskRef) States() [][]float64 { return [][]float64{o.G, o.M, o.V, o.Lookahead} }
func (o diskRef) SetT(t int)          { o.T = t }

func newDiskRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.DefaultDiSK()
	fields := adamWFields(&h.AdamW)
	fields["kappa"], fields["gamma"] = &h.Kappa, &h.Gamma
	if err := setFields(fields, sets); err != nil {
		return nil, nil, err
	}
	return diskRef{oracle.NewDiSK(h, n)}, diskBound{h: h}, nil
}

type diskCorrImpl struct{ *disk_corr.Optimizer }

func (o diskCorrImpl) States() [][]float32 { return [][]float32{o.Gt, o.M, o.V, o.Lookahead} }

func newDiskCorrImpl(sets []setting, n int) (implementation, error) {
	h := disk_corr.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := disk_corr.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return diskCorrImpl{o}, nil
}

type diskCorrRef struct{ *oracle.DiSKCorr }

func (o diskCorrRef) States() [][]float64 { return [][]float64{o.G, o.M, o.V, o.Lookahead} }
func (o diskCorrRef) SetT(t int)          { o.T = t }

func newDiskCorrRef(sets []setting, n int) (reference, bounded, error) {
	h, epsV := oracle.DefaultDiSK(), 1e-8
	fields := adamWFields(&h.AdamW)
	fields["kappa"], fields["gamma"], fields["eps_v"] = &h.Kappa, &h.Gamma, &epsV
	if err := setFields(fields, sets); err != nil {
		return nil, nil, err
	}
	return diskCorrRef{oracle.NewDiSKCorr(h, epsV, n)}, diskBound{h: h, corrected: true, epsV: epsV}, nil
}

type abTrackImpl struct{ *abtrack.Optimizer }

func (o abTrackImpl) States() [][]float32 { return [][]float32{o.Gt, o.S, o.M, o.V} }

func newABTrackImpl(sets []setting, n int) (implementation, error) {
	h := abtrack.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := abtrack.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return abTrackImpl{o}, nil
}

type abTrackRef struct{ *oracle.ABTrack }

func (o abTrackRef) States() [][]float64 { return [][]float64{o.L, o.S, o.M, o.V} }
func (o abTrackRef) SetT(t int)          { o.T = t }

func newABTrackRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.DefaultABTrack()
	fields := adamWFields(&h.AdamW)
	fields["alpha"], fields["beta"], fields["eps_v"] = &h.Alpha, &h.Beta, &h.EpsV
	if err := setFields(fields, sets); err != nil {
		return nil, nil, err
	}
	return abTrackRef{oracle.NewABTrack(h, n)}, abTrackBound{h}, nil
}

type adamWImpl struct{ *dp_adamw.Optimizer }

func (o adamWImpl) States() [][]float32 { return [][]float32{o.M, o.V} }

func newAdamWImpl(sets []setting, n int) (implementation, error) {
	h := dp_adamw.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := dp_adamw.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return adamWImpl{o}, nil
}

type adamWRef struct{ *oracle.DPAdamW }

func (o adamWRef) States() [][]float64 { return [][]float64{o.M, o.V} }
func (o adamWRef) SetT(t int)          { o.T = t }

func newAdamWRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.DefaultAdamW()
	if err := setFields(adamWFields(&h), sets); err != nil {
		return nil, nil, err
	}
	return adamWRef{oracle.NewDPAdamW(h, n)}, adamWBound{h}, nil
}

type adamWBF16Impl struct{ *dp_adamw_bf16.Optimizer }

func (o adamWBF16Impl) States() [][]float32 { return [][]float32{o.M, o.V} }

func newAdamWBF16Impl(sets []setting, n int) (implementation, error) {
	h := dp_adamw_bf16.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := dp_adamw_bf16.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return adamWBF16Impl{o}, nil
}

// newAdamWBF16Ref is DP-AdamW's oracle, whose bound adds the rounding of m
// and v to bfloat16 at every store (storedBound).
func newAdamWBF16Ref(sets []setting, n int) (reference, bounded, error) {
	ref, b, err := newAdamWRef(sets, n)
	return ref, storedBound{b, []int{0, 1}}, err
}

type sgdImpl struct{ *dp_sgd.Optimizer }

func (o sgdImpl) States() [][]float32 { return nil }

func newSGDImpl(sets []setting, n int) (implementation, error) {
	h := dp_sgd.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := dp_sgd.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return sgdImpl{o}, nil
}

type sgdRef struct{ *oracle.DPSGD }

func (o sgdRef) States() [][]float64 { return nil }
func (o sgdRef) SetT(t int)          { o.T = t }

func newSGDRef(sets []setting, n int) (reference, bounded, error) {
	lr := 0.1 // Algorithm 1's step size in the paper's experiments
	if err := setFields(map[string]*float64{"lr": &lr}, sets); err != nil {
		return nil, nil, err
	}
	return sgdRef{oracle.NewDPSGD(lr)}, sgdBound{lr}, nil
}

type lionImpl struct{ *dp_lion.Optimizer }

func (o lionImpl) States() [][]float32 { return [][]float32{o.M} }

func newLionImpl(sets []setting, n int) (implementation, error) {
	h := dp_lion.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := dp_lion.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return lionImpl{o}, nil
}

type lionRef struct{ *oracle.DPLion }

func (o lionRef) States() [][]float64 { return [][]float64{o.M} }
func (o lionRef) SetT(t int)          { o.T = t }

func newLionRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.Lion{Lr: 1e-4, Beta1: 0.9, Beta2: 0.99} // Chen et al.'s defaults, λ = 0
	if err := setFields(map[string]*float64{"lr": &h.Lr, "beta1": &h.Beta1, "beta2": &h.Beta2, "wd": &h.Wd}, sets); err != nil {
		return nil, nil, err
	}
	return lionRef{oracle.NewDPLion(h, n)}, lionBound{h}, nil
}

type adamImpl struct{ *dp_adam.Optimizer }

func (o adamImpl) States() [][]float32 { return [][]float32{o.M, o.V} }

func newAdamImpl(sets []setting, n int) (implementation, error) {
	h := dp_adam.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := dp_adam.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return adamImpl{o}, nil
}

type adamRef struct{ *oracle.DPAdam }

func (o adamRef) States() [][]float64 { return [][]float64{o.M, o.V} }
func (o adamRef) SetT(t int)          { o.T = t }

func newAdamRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.DefaultAdamW()
	if err := setFields(adamWFields(&h), sets); err != nil {
		return nil, nil, err
	}
	return adamRef{oracle.NewDPAdam(h, n)}, adamBound{h}, nil
}

type adamBCImpl struct{ *dp_adambc.Optimizer }

func (o adamBCImpl) States() [][]float32 { return [][]float32{o.M, o.V} }

func newAdamBCImpl(sets []setting, n int) (implementation, error) {
	h := dp_adambc.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := dp_adambc.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return adamBCImpl{o}, nil
}

type adamBCRef struct{ *oracle.DPAdamBC }

func (o adamBCRef) States() [][]float64 { return [][]float64{o.M, o.V} }
func (o adamBCRef) SetT(t int)          { o.T = t }

func newAdamBCRef(sets []setting, n int) (reference, bounded, error) {
	h, epsV := oracle.DefaultAdamW(), 1e-8
	fields := adamWFields(&h)
	fields["eps_v"] = &epsV
	if err := setFields(fields, sets); err != nil {
		return nil, nil, err
	}
	return adamBCRef{oracle.NewDPAdamBC(h, epsV, n)}, adamBCBound{h: h, epsV: epsV}, nil
}

// fiberStates are the state buffers of a generated FiBeR variant.
type fiberStates struct{ gt, r, m, v, lookahead []float32 }

func (s fiberStates) States() [][]float32 { return [][]float32{s.gt, s.r, s.m, s.v, s.lookahead} }

type fiberNoCorrImpl struct {
	*fiber_nocorr.Optimizer
	fiberStates
}

func newFiberNoCorrImpl(sets []setting, n int) (implementation, error) {
	h := fiber_nocorr.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_nocorr.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberNoCorrImpl{o, fiberStates{o.Gt, o.R, o.M, o.V, o.Lookahead}}, nil
}

type fiberBCCorrImpl struct {
	*fiber_bccorr.Optimizer
	fiberStates
}

func newFiberBCCorrImpl(sets []setting, n int) (implementation, error) {
	h := fiber_bccorr.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_bccorr.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberBCCorrImpl{o, fiberStates{o.Gt, o.R, o.M, o.V, o.Lookahead}}, nil
}

type fiberNFloorImpl struct {
	*fiber_nfloor.Optimizer
	fiberStates
}

func newFiberNFloorImpl(sets []setting, n int) (implementation, error) {
	h := fiber_nfloor.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_nfloor.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberNFloorImpl{o, fiberStates{o.Gt, o.R, o.M, o.V, o.Lookahead}}, nil
}

type fiberRFloorImpl struct {
	*fiber_rfloor.Optimizer
	fiberStates
}

func newFiberRFloorImpl(sets []setting, n int) (implementation, error) {
	h := fiber_rfloor.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_rfloor.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberRFloorImpl{o, fiberStates{o.Gt, o.R, o.M, o.V, o.Lookahead}}, nil
}

type fiberFTImpl struct {
	*fiber_ft.Optimizer
	fiberStates
}

func newFiberFTImpl(sets []setting, n int) (implementation, error) {
	h := fiber_ft.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := fiber_ft.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return fiberFTImpl{o, fiberStates{o.Gt, o.R, o.M, o.V, o.Lookahead}}, nil
}

// fiberOracleStates are the state buffers of a FiBeR oracle, with SetT.
type fiberOracleStates struct{ *oracle.FiBeR }

func (o fiberOracleStates) States() [][]float64 { return [][]float64{o.G, o.R, o.M, o.V, o.Lookahead} }
func (o fiberOracleStates) SetT(t int)          { o.T = t }

// fiberVariantRef is a FiBeR ablation's oracle: its own Step, FiBeR's states.
type fiberVariantRef struct {
	step func(theta, g []float64, sigmaW2 float64)
	fiberOracleStates
}

func (o fiberVariantRef) Step(theta, g []float64, sigmaW2 float64) { o.step(theta, g, sigmaW2) }

func newFiberNoCorrRef(sets []setting, n int) (reference, bounded, error) {
	h, err := fiberHypers(sets)
	if err != nil {
		return nil, nil, err
	}
	o := oracle.NewFiBeRNoCorr(h, n)
	return fiberVariantRef{o.Step, fiberOracleStates{&o.FiBeR}}, newFiberAblationBound(h, noCorrection), nil
}

func newFiberNFloorRef(sets []setting, n int) (reference, bounded, error) {
	h, k, err := fiberFloorHypers(sets, "kappa_v", fiber_nfloor.Defaults().KappaV)
	if err != nil {
		return nil, nil, err
	}
	o := oracle.NewFiBeRNoiseFloor(h, k, n)
	return fiberVariantRef{o.Step, fiberOracleStates{&o.FiBeR}}, newFiberFloorBound(h, noiseFloor, k), nil
}

func newFiberRFloorRef(sets []setting, n int) (reference, bounded, error) {
	h, k, err := fiberFloorHypers(sets, "rho", fiber_rfloor.Defaults().Rho)
	if err != nil {
		return nil, nil, err
	}
	o := oracle.NewFiBeRRelFloor(h, k, n)
	return fiberVariantRef{o.Step, fiberOracleStates{&o.FiBeR}}, newFiberFloorBound(h, relativeFloor, k), nil
}

func newFiberBCCorrRef(sets []setting, n int) (reference, bounded, error) {
	h, err := fiberHypers(sets)
	if err != nil {
		return nil, nil, err
	}
	o := oracle.NewFiBeRBCCorr(h, n)
	return fiberVariantRef{o.Step, fiberOracleStates{&o.FiBeR}}, newFiberAblationBound(h, fullCorrection), nil
}

func newFiberFTRef(sets []setting, n int) (reference, bounded, error) {
	h, err := fiberHypers(sets)
	if err != nil {
		return nil, nil, err
	}
	o := oracle.NewFiBeRFT(h, n)
	return fiberVariantRef{o.Step, fiberOracleStates{&o.FiBeR}}, newFiberAblationBound(h, finiteTimeCorrection), nil
}

type dopplerImpl struct{ *doppler.Optimizer }

func (o dopplerImpl) States() [][]float32 { return [][]float32{o.Y, o.Y1, o.G1, o.M, o.V} }

func newDopplerImpl(sets []setting, n int) (implementation, error) {
	h := doppler.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := doppler.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return dopplerImpl{o}, nil
}

type dopplerRef struct{ *oracle.Doppler }

func (o dopplerRef) States() [][]float64 { return [][]float64{o.Y, o.Y1, o.G1, o.M, o.V} }
func (o dopplerRef) SetT(t int)          { o.T = t }

func dopplerHypers(sets []setting) (oracle.DopplerHypers, error) {
	h := oracle.DefaultDoppler()
	fields := adamWFields(&h.AdamW)
	fields["b0"], fields["b1"], fields["a1"], fields["a2"], fields["eps_v"] = &h.B0, &h.B1, &h.A1, &h.A2, &h.EpsV
	return h, setFields(fields, sets)
}

func newDopplerRef(sets []setting, n int) (reference, bounded, error) {
	h, err := dopplerHypers(sets)
	if err != nil {
		return nil, nil, err
	}
	return dopplerRef{oracle.NewDoppler(h, n)}, newDopplerBound(h), nil
}

type scheduleFreeImpl struct{ *schedule_free.Optimizer }

func (o scheduleFreeImpl) States() [][]float32 { return [][]float32{o.Z, o.X, o.V} }

func newScheduleFreeImpl(sets []setting, n int) (implementation, error) {
	h := schedule_free.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := schedule_free.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return scheduleFreeImpl{o}, nil
}

type scheduleFreeRef struct{ *oracle.ScheduleFree }

func (o scheduleFreeRef) States() [][]float64 { return [][]float64{o.Z, o.X, o.V} }
func (o scheduleFreeRef) SetT(t int)          { o.T = t }

func newScheduleFreeRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.DefaultScheduleFree()
	fields := adamWFields(&h.AdamW)
	fields["warmup"] = &h.Warmup
	if err := setFields(fields, sets); err != nil {
		return nil, nil, err
	}
	return scheduleFreeRef{oracle.NewScheduleFree(h, n)}, scheduleFreeBound{h: h}, nil
}

// defaultBLT is the noise filter of blt_sgd.dsl and blt_adam.dsl, which
// `fibergen mechanism --steps 2000 --min-sep 200 --buffers 2` designs
// (TestShippedBLTDefaults in cmd/fibergen holds the files to the designer).
func defaultBLT() oracle.BLT {
	return oracle.BLT{Decay: []float64{0.930178642, 0.324406326}, Weight: []float64{-0.0193223003, -0.462569743}}
}

// bltFields adds b's decays and weights to fields, named as the DSL's
// hypers.
func bltFields(fields map[string]*float64, b oracle.BLT) map[string]*float64 {
	fields["blt_decay1"], fields["blt_decay2"] = &b.Decay[0], &b.Decay[1]
	fields["blt_weight1"], fields["blt_weight2"] = &b.Weight[0], &b.Weight[1]
	return fields
}

type bltSGDImpl struct{ *blt_sgd.Optimizer }

func (o bltSGDImpl) States() [][]float32   { return [][]float32{o.M, o.S1, o.S2} }
func (o bltSGDImpl) drawNoise(seed uint64) { o.Noise, o.Seed = true, seed }

func newBLTSGDImpl(sets []setting, n int) (implementation, error) {
	h := blt_sgd.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := blt_sgd.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients, unless drawNoise
	return bltSGDImpl{o}, nil
}

type bltSGDRef struct{ *oracle.BLTSGD }

func (o bltSGDRef) States() [][]float64                   { return [][]float64{o.M, o.S[0], o.S[1]} }
func (o bltSGDRef) SetT(t int)                            { o.T = t }
func (o bltSGDRef) readNoise(draw func(t, i int) float64) { o.Draw = draw }

func newBLTSGDRef(sets []setting, n int) (reference, bounded, error) {
	h, b := oracle.SGDMomentum{Lr: 0.01, Mu: 0.9}, defaultBLT()
	if err := setFields(bltFields(map[string]*float64{"lr": &h.Lr, "mu": &h.Mu}, b), sets); err != nil {
		return nil, nil, err
	}
	return bltSGDRef{oracle.NewBLTSGD(h, b, n)}, bltSGDBound{h, bltFilterBound{b}}, nil
}

type bltAdamImpl struct{ *blt_adam.Optimizer }

func (o bltAdamImpl) States() [][]float32   { return [][]float32{o.M, o.V, o.S1, o.S2} }
func (o bltAdamImpl) drawNoise(seed uint64) { o.Noise, o.Seed = true, seed }

func newBLTAdamImpl(sets []setting, n int) (implementation, error) {
	h := blt_adam.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := blt_adam.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients, unless drawNoise
	return bltAdamImpl{o}, nil
}

type bltAdamRef struct{ *oracle.BLTAdam }

func (o bltAdamRef) States() [][]float64                   { return [][]float64{o.M, o.V, o.S[0], o.S[1]} }
func (o bltAdamRef) SetT(t int)                            { o.T = t }
func (o bltAdamRef) readNoise(draw func(t, i int) float64) { o.Draw = draw }

func newBLTAdamRef(sets []setting, n int) (reference, bounded, error) {
	h, b := oracle.DefaultAdamW(), defaultBLT()
	if err := setFields(bltFields(adamWFields(&h), b), sets); err != nil {
		return nil, nil, err
	}
	return bltAdamRef{oracle.NewBLTAdam(h, b, n)}, bltAdamBound{adamBound{h}, bltFilterBound{b}}, nil
}

type adEMAMixImpl struct{ *ademamix.Optimizer }

func (o adEMAMixImpl) States() [][]float32 { return [][]float32{o.M1, o.M2, o.V} }

func newAdEMAMixImpl(sets []setting, n int) (implementation, error) {
	h := ademamix.Defaults()
	if err := applySets(h.Set, sets); err != nil {
		return nil, err
	}
	o, err := ademamix.New(h, n)
	if err != nil {
		return nil, err
	}
	o.Noise = false // the streams hold privatized gradients
	return adEMAMixImpl{o}, nil
}

type adEMAMixRef struct{ *oracle.AdEMAMix }

func (o adEMAMixRef) States() [][]float64 { return [][]float64{o.M1, o.M2, o.V} }
func (o adEMAMixRef) SetT(t int)          { o.T = t }

func newAdEMAMixRef(sets []setting, n int) (reference, bounded, error) {
	h := oracle.DefaultAdEMAMix()
	fields := adamWFields(&h.AdamW)
	fields["beta3"], fields["alpha"], fields["warmup"] = &h.Beta3, &h.Alpha, &h.Warmup
	if err := setFields(fields, sets); err != nil {
		return nil, nil, err
	}
	return adEMAMixRef{oracle.NewAdEMAMix(h, n)}, adEMAMixBound{h: h}, nil
}
