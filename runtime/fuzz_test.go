package runtime_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/runtime"
)

// FuzzLoadFrom: any bytes given as a checkpoint load or are refused with an
// error, never a panic, and a refused load changes nothing.
func FuzzLoadFrom(f *testing.F) {
	open := func(t testing.TB) (*runtime.Optimizer, *runtime.Tensor) {
		o, err := runtime.Open("../generated/dp_sgd", runtime.Options{Backend: runtime.Go, AllowResumeAgain: true})
		if err != nil {
			t.Fatal(err)
		}
		tn, err := o.Register("w", []float32{1, 2, 3, 4, 5})
		if err != nil {
			t.Fatal(err)
		}
		return o, tn
	}
	o, tn := open(f)
	if err := errors.Join(o.SetDP(testDP), tn.SetGrad([]float32{1, 0, 0, 0, 0}), o.TrustClippedGradient(), o.Step()); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := o.SaveTo(&buf); err != nil {
		f.Fatal(err)
	}
	o.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("fibergen-checkpoint\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, tn := open(t)
		defer o.Close()
		if err := o.LoadFrom(bytes.NewReader(data)); err != nil {
			if p, _ := tn.Params(); o.Steps() != 0 || p[0] != 1 {
				t.Fatalf("a refused load changed the optimizer: %v", err)
			}
		}
	})
}

// FuzzShard: every layout Shard gives is one the binding can register —
// a slice of a multiple of 4, parts consecutive from the shard's start
// inside it — and the shards of all ranks cover every tensor's coordinates
// once; what it refuses, it refuses with an error.
func FuzzShard(f *testing.F) {
	f.Add([]byte{3, 0, 7, 250, 1}, uint8(2))
	f.Add([]byte{}, uint8(1))
	f.Add([]byte{0, 0, 5}, uint8(7))
	f.Fuzz(func(t *testing.T, raw []byte, world uint8) {
		sizes := make([]int, len(raw))
		for i, b := range raw {
			sizes[i] = int(b) * int(b) // up to 65025: shards of many Philox groups
		}
		covered := make([]int, len(sizes))
		for rank := range int(world) {
			l, err := runtime.Shard(sizes, int(world), rank)
			if err != nil {
				t.Fatalf("Shard(%v, %d, %d): %v", sizes, world, rank, err)
			}
			checkShard(t, l, sizes, covered)
		}
		for i, c := range covered {
			if world > 0 && c != sizes[i] {
				t.Fatalf("Shard(%v, %d): tensor %d covered %d of %d coordinates", sizes, world, i, c, sizes[i])
			}
		}
		checkShardWhole(t, sizes, int(world))
	})
}

// checkShardWhole checks ShardWhole's layouts of sizes over world workers:
// shards one after the other from 0 to the total, cut only where a tensor
// ends, Slice a multiple of 4 that holds the longest, each tensor wholly in
// one shard, and every worker given the same bounds.
func checkShardWhole(t *testing.T, sizes []int, world int) {
	t.Helper()
	n := 0
	ends := map[int]bool{0: true}
	for _, s := range sizes {
		n += s
		ends[n] = true
	}
	var first runtime.ShardLayout
	for rank := range world {
		l, err := runtime.ShardWhole(sizes, world, rank)
		if err != nil {
			t.Fatalf("ShardWhole(%v, %d, %d): %v", sizes, world, rank, err)
		}
		if rank == 0 {
			first = l
		}
		b := l.Bounds
		if len(b) != world+1 || b[0] != 0 || b[world] != n || !slices.Equal(b, first.Bounds) || l.Lo != b[rank] || l.Hi != b[rank+1] ||
			l.Slice%4 != 0 || l.Hi-l.Lo > l.Slice || !ends[l.Lo] || !ends[l.Hi] || l.Lo > l.Hi {
			t.Fatalf("ShardWhole(%v, %d, %d) = %+v", sizes, world, rank, l)
		}
		for i, p := range l.Parts {
			if p[1]-p[0] != 0 && p[1]-p[0] != sizes[i] {
				t.Fatalf("ShardWhole(%v, %d, %d): tensor %d split, part %v", sizes, world, rank, i, p)
			}
		}
	}
}

// checkShard checks one shard's layout and adds its parts to covered.
func checkShard(t *testing.T, l runtime.ShardLayout, sizes, covered []int) {
	t.Helper()
	if l.Slice%4 != 0 || l.Hi-l.Lo != l.Slice || len(l.Parts) != len(sizes) {
		t.Fatalf("layout %+v of %v", l, sizes)
	}
	next := l.Lo
	for i, p := range l.Parts {
		if p[0] != next || p[1] < p[0] || p[1] > l.Hi {
			t.Fatalf("part %d %v of layout %+v of %v: not consecutive inside the shard", i, p, l, sizes)
		}
		next = p[1]
		covered[i] += p[1] - p[0]
	}
}
