package runtime_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// rangeHypers are the hypers of TestRanges*: the optimizer's, and tensors
// b and d's own.
var (
	rangeBase = map[string]float64{"wd": 0.1, "lr": 0.01}
	rangeOwn  = map[int]map[string]float64{1: {"wd": 0}, 3: {"wd": 0, "beta1": 0.8}}
)

// registeredWithHypers steps fiber over tensors registered from theta with
// rangeBase and rangeOwn, its diagnostics on: the run ranges must
// reproduce, buffers and clamp_mass.
func registeredWithHypers(t *testing.T, theta []float32, grads [][]float32) ([][]float32, float64) {
	t.Helper()
	o, ts := openSized(t, kernelDir(t, "fiber"), runtime.Options{Backend: runtime.Go}, tensorSizes, theta)
	if err := errors.Join(o.SetHypers(rangeBase), o.EnableDiagnostics()); err != nil {
		t.Fatal(err)
	}
	for i, h := range rangeOwn {
		if err := ts[i].SetHypers(h); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range grads {
		if err := stepAll(o, ts, g); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := o.ClampMass()
	if err != nil {
		t.Fatal(err)
	}
	return allBuffers(t, o, ts), cm
}

// openRanges opens fiber for shard l of tensorSizes (registerRanges), on
// buffers of the trainer's (UseBuffers) holding theta's coordinates of the
// shard.
func openRanges(t *testing.T, backend runtime.Backend, l runtime.ShardLayout, theta []float32) (*runtime.Optimizer, [][]float32) {
	t.Helper()
	o := openDP(t, kernelDir(t, "fiber"), runtime.Options{Backend: backend, Offset: uint64(l.Lo)}, testDP)
	n := registerRanges(t, o, l)
	bufs := make([][]float32, len(o.Manifest().Buffers))
	for i := range bufs {
		bufs[i] = make([]float32, n)
	}
	copy(bufs[ir.ThetaBuffer], theta[l.Lo:])
	if err := o.UseBuffers(bufs); err != nil {
		t.Fatal(err)
	}
	return o, bufs
}

// registerRanges registers the parts of shard l as ranges of o, with
// rangeBase and rangeOwn and seed 2026, and returns their length.
func registerRanges(t *testing.T, o *runtime.Optimizer, l runtime.ShardLayout) int {
	t.Helper()
	n := 0
	for i, p := range l.Parts {
		tn, err := o.RegisterRange(string(rune('a'+i)), p[1]-p[0])
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := rangeOwn[i]; ok {
			if err := tn.SetHypers(h); err != nil {
				t.Fatal(err)
			}
		}
		n += p[1] - p[0]
	}
	if err := errors.Join(o.SetSeed(2026), o.SetHypers(rangeBase)); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRangesMatchTensors: ranges of the trainer's buffers with hypers of
// their own step, whole and sharded over two and three workers (Shard), on
// the host kernel and the reference, bit for bit as registered tensors
// with those hypers: one optimizer over a binding's parameter groups.
func TestRangesMatchTensors(t *testing.T) {
	theta, grads := inputs(3)
	want, _ := registeredWithHypers(t, theta, grads)
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
		for _, world := range []int{1, 2, 3} {
			got := make([][]float32, len(want))
			for rank := range world {
				l, err := runtime.Shard(tensorSizes, world, rank)
				if err != nil {
					t.Fatal(err)
				}
				o, bufs := openRanges(t, backend, l, theta)
				for _, g := range grads {
					copy(bufs[ir.GradBuffer], g[l.Lo:])
					if err := errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.Step()); err != nil {
						t.Fatal(err)
					}
				}
				got[0] = append(got[0], bufs[ir.ThetaBuffer]...)
				for k, s := range bufs[ir.FirstState:] {
					got[1+k] = append(got[1+k], s...)
				}
			}
			if !sameBuffers(got, want) {
				t.Errorf("%s over %d workers: the ranges did not step as the registered tensors", backend, world)
			}
		}
	}
}

// TestRangesCheckpoint: the checkpoint of an optimizer over ranges holds
// their layout and hypers, and no buffers; one of another layout is
// refused.
func TestRangesCheckpoint(t *testing.T) {
	theta, grads := inputs(1)
	l, _ := runtime.Shard(tensorSizes, 1, 0)
	a, bufs := openRanges(t, runtime.CPU, l, theta)
	copy(bufs[1], grads[0])
	if err := errors.Join(a.GradientWritten(), a.TrustClippedGradient(), a.Step()); err != nil {
		t.Fatal(err)
	}
	data := saveBytes(t, a)
	if max := 4096; len(data) > max {
		t.Errorf("checkpoint of %d bytes: it holds the buffers?", len(data))
	}
	b, _ := openRanges(t, runtime.CPU, l, theta)
	for _, tn := range b.Tensors() {
		tn.SetHypers(nil)
	}
	if err := b.LoadFrom(strings.NewReader(string(data))); err != nil {
		t.Fatal(err)
	}
	if got := b.Tensors()[3].Hypers(); !cmp.Equal(got, rangeOwn[3]) {
		t.Errorf("loaded hypers of d: %v, want %v", got, rangeOwn[3])
	}
	other := l
	other.Parts = slices.Clone(l.Parts)
	other.Parts[1], other.Parts[2] = [2]int{l.Parts[1][0], l.Parts[1][0]}, [2]int{l.Parts[1][0], l.Parts[2][1]}
	c, _ := openRanges(t, runtime.CPU, other, theta)
	if err := c.LoadFrom(strings.NewReader(string(data))); err == nil || !strings.Contains(err.Error(), "tensor layout differs") {
		t.Errorf("a checkpoint of other ranges: %v", err)
	}
}

// TestRangesRefused: ranges and tensors with values do not mix; the
// trainer's buffers must hold what the ranges cover; a range steps only
// on the trainer's buffers, and its gradient is not SetGrad's.
func TestRangesRefused(t *testing.T) {
	dir := kernelDir(t, "fiber")
	ranged := openDP(t, dir, runtime.Options{}, testDP)
	r, err := ranged.RegisterRange("a", 8)
	if err != nil {
		t.Fatal(err)
	}
	_, regErr := ranged.Register("b", make([]float32, 4))
	valued := openDP(t, dir, runtime.Options{}, testDP)
	valued.Register("a", make([]float32, 4))
	_, rangeErr := valued.RegisterRange("b", 4)
	_, negErr := ranged.RegisterRange("c", -1)
	short := make([][]float32, len(ranged.Manifest().Buffers))
	for i := range short {
		short[i] = make([]float32, 7)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"register after ranges", regErr, "ranges of the trainer's buffers"},
		{"range after register", rangeErr, "tensors with values of its own"},
		{"negative", negErr, "-1 coordinates"},
		{"set grad", r.SetGrad(make([]float32, 8)), "write its gradient there"},
		{"step without buffers", ranged.Step(), "give them with UseBuffers"},
		{"short buffers", ranged.UseBuffers(short), "buffers of 7 coordinates given, the ranges of fiber (RegisterRange) cover 8"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, c.err, c.want)
		}
	}
}

// TestShard: shards of one length, a multiple of 4, and each tensor's
// part of a shard.
func TestShard(t *testing.T) {
	for _, c := range []struct {
		whole       bool // ShardWhole
		sizes       []int
		world, rank int
		want        runtime.ShardLayout
		err         string
	}{
		{sizes: []int{5, 6}, world: 1, want: runtime.ShardLayout{Slice: 12, Lo: 0, Hi: 12, Parts: [][2]int{{0, 5}, {5, 11}}}},
		{sizes: []int{5, 6}, world: 2, rank: 0, want: runtime.ShardLayout{Slice: 8, Lo: 0, Hi: 8, Parts: [][2]int{{0, 5}, {5, 8}}}},
		{sizes: []int{5, 6}, world: 2, rank: 1, want: runtime.ShardLayout{Slice: 8, Lo: 8, Hi: 16, Parts: [][2]int{{8, 8}, {8, 11}}}},
		{sizes: []int{3}, world: 3, rank: 2, want: runtime.ShardLayout{Slice: 4, Lo: 8, Hi: 12, Parts: [][2]int{{8, 8}}}},
		{sizes: []int{0, 4, 0}, world: 1, want: runtime.ShardLayout{Slice: 4, Lo: 0, Hi: 4, Parts: [][2]int{{0, 0}, {0, 4}, {4, 4}}}},
		{sizes: []int{4}, world: 2, rank: 2, err: "shard 2 of 2"},
		{sizes: []int{4}, world: 0, err: "shard 0 of 0"},
		{sizes: []int{-1}, world: 1, err: "tensor 0 of -1"},
		{sizes: []int{1 << 60, 1}, world: 1, err: "tensor 1 of 1"},
		// ShardWhole: 12 is the end nearest 32/2, and the shards are 12 and 20 long
		{whole: true, sizes: []int{5, 6, 1, 20}, world: 2, rank: 1, want: runtime.ShardLayout{Slice: 20, Lo: 12, Hi: 32,
			Parts: [][2]int{{12, 12}, {12, 12}, {12, 12}, {12, 32}}, Bounds: []int{0, 12, 32}}},
		{whole: true, sizes: []int{4, 4}, world: 2, rank: 0, want: runtime.ShardLayout{Slice: 4, Lo: 0, Hi: 4,
			Parts: [][2]int{{0, 4}, {4, 4}}, Bounds: []int{0, 4, 8}}},
		{whole: true, sizes: []int{9}, world: 3, rank: 1, want: runtime.ShardLayout{Slice: 12, Lo: 0, Hi: 9, // one tensor: one worker's
			Parts: [][2]int{{0, 9}}, Bounds: []int{0, 0, 9, 9}}},
		{whole: true, sizes: []int{4}, world: 1, rank: 1, err: "shard 1 of 1"},
	} {
		t.Run(fmt.Sprint(c.whole, c.sizes, c.world, c.rank), func(t *testing.T) {
			shard := runtime.Shard
			if c.whole {
				shard = runtime.ShardWhole
			}
			got, err := shard(c.sizes, c.world, c.rank)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestCUDAStepDeviceRanges: StepDevice on ranges with hypers of their own
// launches once per setting, initializes and steps as registered tensors
// with those hypers on the reference, and sums the diagnostics per setting.
func TestCUDAStepDeviceRanges(t *testing.T) {
	ctx := cudaContext(t)
	theta, grads := inputs(2)
	want, wantMass := registeredWithHypers(t, theta, grads)
	for _, world := range []int{1, 2} {
		got := make([][]float32, len(want))
		for rank := range world {
			l, err := runtime.Shard(tensorSizes, world, rank)
			if err != nil {
				t.Fatal(err)
			}
			o, a, n := stepDeviceShard(t, ctx, l, theta, grads)
			got[0] = append(got[0], a.get(t, ir.ThetaBuffer)[:n]...)
			for k := range want[1:] {
				got[1+k] = append(got[1+k], a.get(t, ir.FirstState+k)[:n]...)
			}
			if world == 1 {
				if cm, err := o.ClampMass(); err != nil || cm != wantMass {
					t.Errorf("clamp_mass %v (%v), the reference's %v", cm, err, wantMass)
				}
			}
		}
		if !sameBuffers(got, want) {
			t.Errorf("StepDevice over %d workers: the ranges did not step as the registered tensors", world)
		}
	}
}

// stepDeviceShard steps shard l of theta's coordinates on device buffers
// of the trainer's, its ranges with hypers of their own, once per
// gradient, at the shard's global offset.
func stepDeviceShard(t *testing.T, ctx *cudadrv.Context, l runtime.ShardLayout, theta []float32, grads [][]float32) (*runtime.Optimizer, *deviceArena, int) {
	t.Helper()
	o, err := runtime.Open(ptxDir(t, "fiber"), runtime.Options{Backend: runtime.CUDA})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	n := registerRanges(t, o, l)
	if err := errors.Join(o.SetDP(testDP), o.EnableDiagnostics()); err != nil {
		t.Fatal(err)
	}
	a := newDeviceArena(t, ctx, len(o.Manifest().Buffers), n, 1)
	a.put(t, ir.ThetaBuffer, theta[l.Lo:l.Lo+n])
	if err := o.InitDeviceStates(a.bufs, n); err != nil {
		t.Fatal(err)
	}
	if err := o.StepDevice(a.bufs, n-1, uint64(l.Lo)); err == nil || !strings.Contains(err.Error(), "cover") {
		t.Errorf("StepDevice on fewer coordinates than the ranges: %v", err)
	}
	if _, err := o.Privatize(make([]float32, n), nil); err == nil || !strings.Contains(err.Error(), "PrivatizeDevice") {
		t.Errorf("Privatize into the own gradient of device ranges: %v, want a refusal naming PrivatizeDevice", err)
	}
	for _, g := range grads {
		a.put(t, ir.GradBuffer, g[l.Lo:l.Lo+n])
		if err := errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.StepDevice(a.bufs, n, uint64(l.Lo))); err != nil {
			t.Fatal(err)
		}
	}
	return o, a, n
}
