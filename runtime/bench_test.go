package runtime_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/runtime"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// benchN is the number of coordinates of BenchmarkStep: 16 MiB per buffer,
// past the last-level cache.
const benchN = 1 << 22

// BenchmarkStep measures one step of fiber over benchN coordinates on each
// backend (cuda is skipped where it cannot run), noise drawn in the step.
// The bytes per step are what the step must move, from the manifest: every
// buffer read once and every read-write buffer written once (fiber: 44 per
// coordinate). "of-copy" is the step's throughput over the copy bandwidth
// measured in the same benchmark: a parallel copy over as many goroutines
// as the step uses (the median of 5 copies before the steps and 5 after),
// or on cuda the device-to-device copy (cudadrv.CopyBandwidth). Run it with
// go test ./runtime -run '^$' -bench Step -benchtime 10x.
func BenchmarkStep(b *testing.B) {
	dir := kernelDir(b, "fiber")
	for _, backend := range []runtime.Backend{runtime.CPU, runtime.Go, runtime.CUDA} {
		b.Run(string(backend), func(b *testing.B) {
			o, last, bytes := openBench(b, dir, backend)
			b.SetBytes(bytes)
			var c *hostCopy
			if backend != runtime.CUDA {
				c = newHostCopy(bytes, goruntime.GOMAXPROCS(0))
				c.time(5)
			}
			b.ResetTimer()
			for range b.N {
				if err := o.Step(); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := last.Params(); err != nil { // waits for a device
				b.Fatal(err)
			}
			b.StopTimer()
			stepRate := float64(bytes) * float64(b.N) / b.Elapsed().Seconds()
			var copyRate float64
			if backend == runtime.CUDA {
				copyRate = deviceCopyRate(b, bytes)
			} else {
				copyRate = c.rate(c.time(5))
			}
			b.ReportMetric(stepRate/copyRate, "of-copy")
			b.ReportMetric(copyRate/1e9, "copy-GB/s")
		})
	}
}

// openBench opens the optimizer in dir on backend with benchN random
// parameters and gradients, and takes one untimed step. The last coordinate
// is a tensor of its own, whose read-back waits for a device's steps. It
// returns the bytes one step must move. On cuda an error skips.
func openBench(b *testing.B, dir string, backend runtime.Backend) (o *runtime.Optimizer, last *runtime.Tensor, bytes int64) {
	b.Helper()
	o, err := runtime.Open(dir, runtime.Options{Backend: backend, AllowGradientReuse: true}) // every step on one gradient
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { o.Close() })
	if err := o.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 1, BatchSize: 256}); err != nil {
		b.Fatal(err)
	}
	if err := o.SetSeed(1); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, benchN)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
	}
	w, err := o.Register("w", vals[:benchN-1])
	if err != nil {
		b.Fatal(err)
	}
	if last, err = o.Register("last", vals[benchN-1:]); err != nil {
		b.Fatal(err)
	}
	for i := range vals {
		vals[i] = float32(0.01 * r.NormFloat64())
	}
	for _, t := range []*runtime.Tensor{w, last} {
		err = t.SetGrad(vals[t.Offset : t.Offset+t.Len])
		if err != nil {
			break
		}
	}
	if err == nil {
		err = errors.Join(o.TrustClippedGradient(), o.Step()) // made-up clipped means
	}
	if err == nil {
		_, err = last.Params()
	}
	switch {
	case err != nil && backend == runtime.CUDA:
		b.Skipf("cuda: %v", err)
	case err != nil:
		b.Fatal(err)
	case o.Backend() != backend:
		b.Fatalf("stepping on %s, want %s", o.Backend(), backend)
	}
	return o, last, stepBytes(b, o.Manifest()) * benchN
}

// stepBytes is the bytes per coordinate a step must move: 4 for every
// buffer (each is read) and 4 more for every read-write buffer.
func stepBytes(b *testing.B, m *manifest.Manifest) int64 {
	var n int64
	for _, buf := range m.Buffers {
		switch buf.Access {
		case "read":
			n += 4
		case "read-write":
			n += 8
		default:
			b.Fatalf("buffer %s has access %q", buf.Name, buf.Access)
		}
	}
	return n
}

// deviceCopyRate is the device-to-device copy bandwidth in bytes per
// second, measured with as many bytes as a step moves (at most 1 GiB a
// buffer).
func deviceCopyRate(b *testing.B, bytes int64) float64 {
	d, err := cudadrv.Load()
	if err != nil {
		b.Fatal(err)
	}
	dev, err := d.Device(0)
	if err != nil {
		b.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	gbps, err := ctx.CopyBandwidth(int(min((bytes/2+255)&^255, 1<<30)), 20)
	if err != nil {
		b.Fatal(err)
	}
	return gbps * 1e9
}

// hostCopy is runtime.HostCopy with the durations of its timed copies.
type hostCopy struct {
	*runtime.HostCopy
	times []time.Duration
}

func newHostCopy(bytes int64, threads int) *hostCopy {
	return &hostCopy{HostCopy: runtime.NewHostCopy(bytes, threads)}
}

// time runs reps copies and returns their durations, appended to the
// durations of every earlier call.
func (c *hostCopy) time(reps int) []time.Duration {
	for range reps {
		start := time.Now()
		c.Run()
		c.times = append(c.times, time.Since(start))
	}
	return c.times
}

// rate is the bytes per second of the median of ds.
func (c *hostCopy) rate(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(c.Moved()) / med.Seconds()
}

// BenchmarkPrivatizeGroups measures Privatize of 32 examples of benchN
// coordinates on the CPU backend with one clipping norm and with 2 and 64
// clip groups of equal size, rows given as one matrix and as 64 tensors
// read in place: a group's norms and sum read its columns, so the groups
// together read what one norm does. Run it with go test ./runtime -run
// '^$' -bench PrivatizeGroups -benchtime 10x.
func BenchmarkPrivatizeGroups(b *testing.B) {
	const k, tensors = 32, 64
	o := openDP(b, kernelDir(b, "dp_sgd"), runtime.Options{}, testDP)
	for i := range tensors {
		if _, err := o.Register(fmt.Sprint(i), make([]float32, benchN/tensors)); err != nil {
			b.Fatal(err)
		}
	}
	cur := exampleRows(1, k, benchN)
	segs := segmentsOf(cur, nil, k, slices.Repeat([]int{benchN / tensors}, tensors))
	for _, g := range []int{0, 2, 64} {
		dp := runtime.DP{ClipNorm: 1, BatchSize: k}
		if g > 0 {
			dp = runtime.DP{Groups: slices.Repeat([]runtime.ClipGroup{{Size: benchN / g, ClipNorm: 1}}, g), BatchSize: k}
		}
		if err := o.SetDP(dp); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("groups=%d/rows", g), func(b *testing.B) {
			b.SetBytes(2 * 4 * k * benchN) // the rows read twice: norms, then the sum
			for range b.N {
				if _, err := o.Privatize(cur, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("groups=%d/segments", g), func(b *testing.B) {
			b.SetBytes(2 * 4 * k * benchN)
			for range b.N {
				if _, err := o.PrivatizeSegmentsTo(nil, segs, k, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
