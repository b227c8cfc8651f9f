package runtime_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/floatbits"
	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/cudadrv"
	"github.com/fibergen/fibergen/runtime/hostkernel"
	"github.com/google/go-cmp/cmp"
)

// clipGroups split tensorSizes' 5134 coordinates into four groups at
// tensor ends; four groups and norms that are powers of two make √G·C_g
// exact, so that a group's proportional noise is a flat run's bit for bit.
var clipGroups = []runtime.ClipGroup{{Size: 8, ClipNorm: 0.25}, {Size: 4099, ClipNorm: 1}, {Size: 3, ClipNorm: 0.5}, {Size: 1024, ClipNorm: 2}}

// groupsDP is per-group clipping over clipGroups, no noise, B 8.
var groupsDP = runtime.DP{Groups: clipGroups, BatchSize: 8}

// groupReference privatizes the k rows of n values group by group, each
// group's columns gathered into a matrix of their own and privatized by
// package reduce (the kernels' Go reference) with the group's norm.
func groupReference(cur []float32, k, n, batch int) []float32 {
	out := make([]float32, n)
	lo := 0
	for _, g := range clipGroups {
		sub := make([]float32, 0, k*g.Size)
		for x := range k {
			sub = append(sub, cur[x*n+lo:x*n+lo+g.Size]...)
		}
		reduce.Privatize(out[lo:lo+g.Size], sub, nil, k, float32(batch), 0, g.ClipNorm)
		lo += g.Size
	}
	return out
}

// TestClipGroupsMatchReference holds per-group clipping to its reference,
// bit for bit, on the host kernels in every variant this CPU runs and the
// Go reference: the rows as a matrix and as segments, the scales computed
// and given, k = 0, 1 and many; and checks each scale against
// min(1, C_g/‖u_g‖) computed in float64.
func TestClipGroupsMatchReference(t *testing.T) {
	isas, err := hostkernel.ISAs()
	if err != nil {
		t.Fatal(err)
	}
	for _, isa := range append(isas, "go") {
		t.Run(isa, func(t *testing.T) {
			backend := runtime.Go
			if isa != "go" {
				backend = runtime.CPU
				t.Setenv(hostisa.EnvVar, isa)
			}
			o := openLayout(t, "dp_sgd", backend, tensorSizes)
			if err := o.SetDP(groupsDP); err != nil {
				t.Fatal(err)
			}
			if c := o.HostISA(); backend == runtime.CPU && (c == nil || c.Chosen != isa) {
				t.Fatalf("forced %s, the CPU backend runs %+v", isa, c)
			}
			for _, k := range []int{0, 1, 9, 33} {
				checkGroupRows(t, o, k)
			}
		})
	}
}

func checkGroupRows(t *testing.T, o *runtime.Optimizer, k int) {
	t.Helper()
	n := o.Len()
	cur := exampleRows(3, k, n)
	want := groupReference(cur, k, n, groupsDP.BatchSize)
	rows, segs, scaled := make([]float32, n), make([]float32, n), make([]float32, n)
	st, err := o.PrivatizeTo(rows, cur, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sst, err := o.PrivatizeSegmentsTo(segs, segmentsOf(cur, nil, k, tensorSizes), k, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.IssueScales(st.Scales)
	if _, err := o.PrivatizeTo(scaled, cur, nil, st.Scales); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]float32{"rows": rows, "segments": segs, "scales given": scaled} {
		if d := floatbits.Diff(want, got); d != "" {
			t.Errorf("k %d, %s: per-group clipping differs from the reference: %s", k, name, d)
		}
	}
	if d := floatbits.Diff(st.Scales, sst.Scales); d != "" || st.Clipped != sst.Clipped {
		t.Errorf("k %d: the segments' scales differ from the rows': %s", k, d)
	}
	checkGroupScales(t, cur, k, n, st)
}

// checkGroupScales checks the group-major scales against float64 norms,
// and Clipped against the examples clipped in some group.
func checkGroupScales(t *testing.T, cur []float32, k, n int, st runtime.PrivatizeStats) {
	t.Helper()
	if len(st.Scales) != k*len(clipGroups) {
		t.Fatalf("%d scales for %d examples in %d groups", len(st.Scales), k, len(clipGroups))
	}
	clipped := map[int]bool{}
	lo := 0
	for g, grp := range clipGroups {
		for x := range k {
			var norm2 float64
			for _, v := range cur[x*n+lo : x*n+lo+grp.Size] {
				norm2 += float64(v) * float64(v)
			}
			want := 1.0
			if norm := math.Sqrt(norm2); norm > grp.ClipNorm {
				want, clipped[x] = grp.ClipNorm/norm, true
			}
			if got := float64(st.Scales[g*k+x]); math.Abs(got-want) > 1e-5*want {
				t.Errorf("group %d, example %d: scale %v, want min(1, C/‖u‖) = %v", g, x, got, want)
			}
		}
		lo += grp.Size
	}
	if st.Clipped != len(clipped) || k > 9 && (len(clipped) == 0 || len(clipped) == k) {
		t.Errorf("%d examples clipped, want %d of %d (some, not all)", st.Clipped, len(clipped), k)
	}
}

// TestClipGroupsNonFinite: an example whose last group holds a NaN refuses
// the privatization, naming it, and nothing is written, though the groups
// before it were clean.
func TestClipGroupsNonFinite(t *testing.T) {
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
		o := openLayout(t, "dp_sgd", backend, tensorSizes)
		if err := o.SetDP(groupsDP); err != nil {
			t.Fatal(err)
		}
		n := o.Len()
		cur := exampleRows(4, 5, n)
		cur[3*n+n-2] = float32(math.NaN())
		out := make([]float32, n)
		for i := range out {
			out[i] = 7
		}
		_, err := o.PrivatizeTo(out, cur, nil, nil)
		var bad *runtime.NonFiniteExampleError
		if !errors.As(err, &bad) || bad.Example != 3 {
			t.Errorf("%s: a NaN in example 3's last group: %v", backend, err)
		}
		for i, v := range out {
			if v != 7 {
				t.Fatalf("%s: coordinate %d written (%v) by a refused privatization", backend, i, v)
			}
		}
	}
}

// TestClipGroupsNoise checks the noise of every group against a flat run
// whose one norm gives that group's variance, bit for bit on the group's
// coordinates (the same seed, the same global indices): σ_DP·√Σ C_g²/B
// everywhere, or σ_DP·√G·C_g/B with ProportionalNoise; for dp_sgd and for
// lamb, whose per-tensor reductions are then taken at their group's
// variance. θ starts at 1 + small values, the gradient at 0 (no
// examples), so a step moves θ by its noise.
func TestClipGroupsNoise(t *testing.T) {
	for _, opt := range []string{"dp_sgd", "lamb"} {
		for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go} {
			for _, prop := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/proportional=%v", opt, backend, prop), func(t *testing.T) {
					dp := runtime.DP{Groups: clipGroups, NoiseMultiplier: 2, BatchSize: 4, ProportionalNoise: prop}
					got := noisyStep(t, opt, backend, dp)
					lo := 0
					for _, g := range clipGroups {
						flat := runtime.DP{ClipNorm: dp.Sensitivity(), NoiseMultiplier: 2, BatchSize: 4}
						if prop {
							flat.ClipNorm = 2 * g.ClipNorm // √G·C_g
						}
						want := noisyStep(t, opt, backend, flat)
						if d := floatbits.Diff(want[lo:lo+g.Size], got[lo:lo+g.Size]); d != "" {
							t.Errorf("group at %d: the noise differs from a flat run at C = %v: %s", lo, flat.ClipNorm, d)
						}
						lo += g.Size
					}
				})
			}
		}
	}
}

// noisyStep runs one step of opt under dp from θ = 1 + small values on a
// privatization of no examples, and returns θ.
func noisyStep(t *testing.T, opt string, backend runtime.Backend, dp runtime.DP) []float32 {
	t.Helper()
	theta := exampleRows(5, 1, 5134)
	for i := range theta {
		theta[i] += 1
	}
	o, ts := openSized(t, kernelDir(t, opt), runtime.Options{Backend: backend}, tensorSizes, theta)
	if err := o.SetDP(dp); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Privatize(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
	return flatParams(t, ts)
}

// TestClipGroupsRefused: bad groups are refused with the reason, and
// nothing changes.
func TestClipGroupsRefused(t *testing.T) {
	bad := func(g ...runtime.ClipGroup) runtime.DP {
		return runtime.DP{Groups: g, NoiseMultiplier: 1, BatchSize: 8}
	}
	for _, c := range []struct {
		dp   runtime.DP
		want string
	}{
		{bad(runtime.ClipGroup{Size: 5134, ClipNorm: 0}), "clip group 0: clipping norm 0"},
		{bad(runtime.ClipGroup{Size: 5134, ClipNorm: math.NaN()}), "clipping norm NaN"},
		{bad(runtime.ClipGroup{Size: 8, ClipNorm: 1}, runtime.ClipGroup{Size: 5126, ClipNorm: math.Inf(1)}), "clip group 1: clipping norm +Inf"},
		{bad(runtime.ClipGroup{Size: 0, ClipNorm: 1}), "clip group 0 has 0 coordinates"},
		{bad(), "C = 0"},
		{runtime.DP{ClipNorm: 1, Groups: clipGroups, BatchSize: 8}, "take no ClipNorm"},
		{runtime.DP{ClipNorm: 1, BatchSize: 8, ProportionalNoise: true}, "set DP.Groups"},
	} {
		o := openLayout(t, "dp_sgd", runtime.Go, tensorSizes)
		if err := o.SetDP(c.dp); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.dp, err, c.want)
		}
		if d, _ := o.DP(); d.ClipNorm != 1 || d.Groups != nil {
			t.Errorf("%+v: the settings changed to %+v", c.dp, d)
		}
	}
}

// TestClipGroupsLayoutRefused: groups that cut a tensor refuse privatize
// and step, groups other than the rows' length refuse privatize; segments
// that cross a group, scales or norms not one an example and group, and
// the device's privatize are refused.
func TestClipGroupsLayoutRefused(t *testing.T) {
	o := openLayout(t, "dp_sgd", runtime.Go, tensorSizes)
	n := o.Len()
	cur := exampleRows(6, 2, n)
	for _, c := range []struct {
		groups []runtime.ClipGroup
		want   string
	}{
		{[]runtime.ClipGroup{{Size: 9, ClipNorm: 1}, {Size: n - 9, ClipNorm: 1}}, "a clip group ends inside tensor c"},
		{[]runtime.ClipGroup{{Size: 8, ClipNorm: 1}}, "the clip groups cover 8 coordinates; the per-example gradients have 5134"},
	} {
		if err := o.SetDP(runtime.DP{Groups: c.groups, BatchSize: 8}); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Privatize(cur, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: privatize: %v, want %q", c.groups, err, c.want)
		}
		if err := o.Step(); c.groups[0].Size == 9 && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: step: %v, want %q", c.groups, err, c.want)
		}
	}
	if err := o.SetDP(groupsDP); err != nil {
		t.Fatal(err)
	}
	segs := segmentsOf(cur, nil, 2, []int{7, 2, 4098, 3, 1024})
	if _, err := o.PrivatizeSegmentsTo(make([]float32, n), segs, 2, nil); err == nil || !strings.Contains(err.Error(), "segment 1 (coordinates [7, 9)) crosses the clip group [0, 8)") {
		t.Errorf("a segment across a group: %v", err)
	}
	if _, err := o.PrivatizeTo(make([]float32, n), cur, nil, []float32{1, 1}); err == nil || !strings.Contains(err.Error(), "2 scales for 2 examples in 4 clip groups") {
		t.Errorf("one scale an example: %v", err)
	}
	if _, err := o.ClipScales(nil, []float64{1, 2, 3}, nil); err == nil || !strings.Contains(err.Error(), "3 norms for 4 clip groups") {
		t.Errorf("norms not one a group: %v", err)
	}
	if _, err := o.PrivatizeDevice(1, n, 1, 0, 2, nil); err == nil || !strings.Contains(err.Error(), "PrivatizeDeviceGroups") {
		t.Errorf("the device's privatize: %v", err)
	}
	shard := openDP(t, kernelDir(t, "dp_sgd"), runtime.Options{Backend: runtime.Go, Offset: 8}, groupsDP)
	for _, size := range []int{4099, 3, 1024} { // groups 1 to 3
		if _, err := shard.Register(fmt.Sprint(size), make([]float32, size)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := shard.Privatize(exampleRows(6, 2, n-8), nil); err == nil || !strings.Contains(err.Error(), "privatize the whole rows with PrivatizeTo") {
		t.Errorf("a shard's own gradient: %v", err)
	}
}

// TestClipGroupsClipScales: ghost clipping takes norms one an example and
// group, group-major, and clips each group to its norm.
func TestClipGroupsClipScales(t *testing.T) {
	o := openLayout(t, "dp_sgd", runtime.Go, tensorSizes)
	if err := o.SetDP(groupsDP); err != nil {
		t.Fatal(err)
	}
	got, err := o.ClipScales(nil, []float64{0.125, 1, 2, 0.5, 1, 1, 4, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 0.25, 0.5, 1, 0.5, 0.5, 0.5, 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("group-major scales (-want +got):\n%s", d)
	}
	_, err = o.ClipScales(nil, []float64{0.125, 1, 2, 0.5, 1, math.NaN(), 4, 1}, nil)
	var ne *runtime.NonFiniteExampleError
	if !errors.As(err, &ne) || ne.Example != 1 || !strings.Contains(err.Error(), "clip group 2: a norm given for example 1 is NaN") {
		t.Errorf("a NaN norm of example 1 in group 2: %v, want it named with its group", err)
	}
}

// TestClipGroupsCheckpoint: the groups and the noise's allocation travel
// in a checkpoint, and a budget's groups give its DP settings the
// combined sensitivity: σ_DP is the budget's, whatever the groups.
func TestClipGroupsCheckpoint(t *testing.T) {
	o := openLayout(t, "dp_sgd", runtime.Go, tensorSizes)
	s := privacy.Schedule{DatasetSize: 60000, BatchSize: 256, Epochs: 1, Sampling: privacy.Poisson}
	sigma, err := o.SetBudget(runtime.Budget{Epsilon: 3, Groups: clipGroups, ProportionalNoise: true, Schedule: s})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := o.DP()
	if want := (runtime.DP{NoiseMultiplier: d.NoiseMultiplier, BatchSize: 256, Groups: clipGroups, ProportionalNoise: true}); !cmp.Equal(d, want) || math.Abs(d.NoiseMultiplier-sigma) > 1e-12*sigma {
		t.Errorf("the budget's DP settings %+v, want %+v with σ_DP %v", d, want, sigma)
	}
	resumed := openBare(t, "dp_sgd", runtime.Go, tensorSizes)
	if err := resumed.LoadFrom(bytes.NewReader(saveBytes(t, o))); err != nil {
		t.Fatal(err)
	}
	if r, _ := resumed.DP(); !cmp.Equal(d, r) {
		t.Errorf("resumed DP settings (-saved +resumed):\n%s", cmp.Diff(d, r))
	}
}

// TestCUDAPrivatizeDeviceGroups: each group's rows a device matrix of its
// own give the host's per-group bits, scales computed or given; a
// non-finite example leaves the gradient as it was; one matrix for all
// groups is refused.
func TestCUDAPrivatizeDeviceGroups(t *testing.T) {
	ctx := cudaContext(t)
	const batch, n = 5, 5134
	for _, name := range []string{"fiber", "dp_sgd"} {
		cpu := openDP(t, kernelDir(t, name), runtime.Options{}, groupsDP)
		gpu := openDP(t, ptxDir(t, name), runtime.Options{Backend: runtime.CUDA}, groupsDP)
		cur, look, want, wantSt := hostPrivatized(t, cpu, 7, batch, n)
		g := len(clipGroups)
		a := newDeviceArena(t, ctx, 2*g+1, batch*n, 0)
		curs, looks := putGroups(t, a, 0, cur, batch, n), putGroups(t, a, g, look, batch, n)
		out := a.bufs[2*g]
		for _, scales := range [][]float32{nil, wantSt.Scales} {
			if scales != nil {
				gpu.IssueScales(scales)
			}
			st, err := gpu.PrivatizeDeviceGroups(out, n, curs, looks, batch, scales)
			if err != nil {
				t.Fatal(err)
			}
			if d := floatbits.Diff(want, a.get(t, 2*g)[:n]) + floatbits.Diff(wantSt.Scales, st.Scales); d != "" {
				t.Errorf("%s (scales given: %v): the device's per-group privatization differs from the host's: %s", name, scales != nil, d)
			}
		}
		bad := append([]float32(nil), cur...)
		bad[2*n+n-1] = float32(math.Inf(-1))
		putGroups(t, a, 0, bad, batch, n)
		before := a.get(t, 2*g)
		var ne *runtime.NonFiniteExampleError
		if _, err := gpu.PrivatizeDeviceGroups(out, n, curs, looks, batch, nil); !errors.As(err, &ne) || ne.Example != 2 {
			t.Errorf("%s: a non-finite example in the last group: %v", name, err)
		}
		if d := floatbits.Diff(before, a.get(t, 2*g)); d != "" {
			t.Errorf("%s: a refused privatization changed the gradient: %s", name, d)
		}
		if _, err := gpu.PrivatizeDevice(out, n, curs[0], 0, batch, nil); err == nil || !strings.Contains(err.Error(), "PrivatizeDeviceGroups") {
			t.Errorf("%s: one matrix under clip groups: %v", name, err)
		}
	}
}

// putGroups writes each clip group's columns of the k rows of n values
// into arena buffers from, a [k][size] matrix each, and returns their
// addresses (nil for rows nil).
func putGroups(t *testing.T, a *deviceArena, from int, rows []float32, k, n int) []runtime.DevicePtr {
	t.Helper()
	if rows == nil {
		return nil
	}
	var ptrs []runtime.DevicePtr
	lo := 0
	for i, g := range clipGroups {
		m := make([]float32, 0, k*g.Size)
		for x := range k {
			m = append(m, rows[x*n+lo:x*n+lo+g.Size]...)
		}
		a.put(t, from+i, m)
		ptrs, lo = append(ptrs, a.bufs[from+i]), lo+g.Size
	}
	return ptrs
}

// TestCUDAStepDeviceGroups: StepDevice without ranges, in two shards at
// their global offsets, draws each clip group's proportional noise exactly
// where the host's step over the whole does, for dp_sgd and for lamb
// (whose coordinates of a shard in one group are one tensor of its
// reductions, as the host's tensors of the pieces are).
func TestCUDAStepDeviceGroups(t *testing.T) {
	ctx := cudaContext(t)
	const n, cut = 5134, 4000 // the shards cut group 1
	theta := exampleRows(9, 1, n)
	for i := range theta {
		theta[i] += 1
	}
	dp := runtime.DP{Groups: clipGroups, NoiseMultiplier: 2, BatchSize: 4, ProportionalNoise: true}
	for _, opt := range []string{"dp_sgd", "lamb"} {
		host, ts := openSized(t, kernelDir(t, opt), runtime.Options{}, []int{8, cut - 8, 4107 - cut, 3, 1024}, theta)
		if err := errors.Join(host.SetDP(dp), stepAll(host, ts, make([]float32, n))); err != nil {
			t.Fatal(err)
		}
		want := flatParams(t, ts)
		for _, shard := range [][2]int{{0, cut}, {cut, n}} {
			got := deviceShardStep(t, ctx, opt, dp, theta[shard[0]:shard[1]], shard[0])
			if d := floatbits.Diff(want[shard[0]:shard[1]], got); d != "" {
				t.Errorf("%s: the shard at %d differs from the host's step: %s", opt, shard[0], d)
			}
		}
	}
}

// deviceShardStep steps the shard theta of a model, its first coordinate
// at global index offset, once on the device (no ranges, a zero clipped
// mean vouched for) and returns it.
func deviceShardStep(t *testing.T, ctx *cudadrv.Context, opt string, dp runtime.DP, theta []float32, offset int) []float32 {
	t.Helper()
	o := openDP(t, ptxDir(t, opt), runtime.Options{Backend: runtime.CUDA, Offset: uint64(offset)}, dp)
	if err := o.SetSeed(2026); err != nil {
		t.Fatal(err)
	}
	n := len(theta)
	a := newDeviceArena(t, ctx, len(o.Manifest().Buffers), n, 0)
	a.put(t, ir.ThetaBuffer, theta)
	a.put(t, ir.GradBuffer, make([]float32, n))
	if err := errors.Join(o.InitDeviceStates(a.bufs, n), o.GradientWritten(), o.TrustClippedGradient(), o.StepDevice(a.bufs, n, uint64(offset))); err != nil {
		t.Fatal(err)
	}
	return a.get(t, ir.ThetaBuffer)[:n]
}
