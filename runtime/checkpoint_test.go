package runtime_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
)

// allBuffers returns the flat parameters and then every state, flat.
func allBuffers(t *testing.T, o *runtime.Optimizer, ts []*runtime.Tensor) [][]float32 {
	t.Helper()
	out := [][]float32{flatParams(t, ts)}
	for _, b := range o.Manifest().Buffers {
		if b.Role != "state" {
			continue
		}
		var s []float32
		for _, tn := range ts {
			v, err := tn.State(b.Name)
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, v...)
		}
		out = append(out, s)
	}
	return out
}

func sameBuffers(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, sameBits)
}

func saveBytes(t *testing.T, o *runtime.Optimizer) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := o.SaveTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The format's fixed offsets, as checkpoint.go documents them.
const (
	preambleLen = 40
	sumLen      = 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// regions returns the header's and the data's lengths.
func regions(data []byte) (h, d int) {
	return int(binary.LittleEndian.Uint32(data[24:])), int(binary.LittleEndian.Uint64(data[28:]))
}

// reseal fixes the preamble's CRC and the final SHA-256 of a checkpoint
// whose bytes before the SHA-256 were edited.
func reseal(data []byte) []byte {
	out := slices.Clone(data[:len(data)-sumLen])
	binary.LittleEndian.PutUint32(out[36:], crc32.Checksum(out[:36], castagnoli))
	sum := sha256.Sum256(out)
	return append(out, sum[:]...)
}

// rewrite edits a checkpoint's JSON header and reseals it: an intact
// checkpoint with other metadata.
func rewrite(t *testing.T, data []byte, edit func(h map[string]any)) []byte {
	t.Helper()
	hl, _ := regions(data)
	dec := json.NewDecoder(bytes.NewReader(data[preambleLen : preambleLen+hl]))
	dec.UseNumber()
	var h map[string]any
	if err := dec.Decode(&h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	nh, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(data[:preambleLen])
	binary.LittleEndian.PutUint32(out[24:], uint32(len(nh)))
	out = append(out, nh...)
	out = append(out, data[preambleLen+hl:]...)
	return reseal(out)
}

// TestCheckpointResume runs fiber 8 steps uninterrupted, and 3 steps, a
// checkpoint, and 5 more in a fresh optimizer that loads it: the
// parameters and every state agree bit for bit after every step, across
// backends, whether the resuming optimizer's backend has started, been
// closed, or not. The step counter, seed, hypers and DP settings come back
// from the file, and the optimizer that saved goes on undisturbed.
func TestCheckpointResume(t *testing.T) {
	const steps, at = 8, 3
	theta, grads := inputs(steps)
	const lr = 0.01 // not the default: the hypers must come from the checkpoint
	ref, rts := openFiber(t, runtime.Options{}, theta)
	if err := ref.SetHyper("lr", lr); err != nil {
		t.Fatal(err)
	}
	var want [][][]float32
	for _, g := range grads {
		if err := stepAll(ref, rts, g); err != nil {
			t.Fatal(err)
		}
		want = append(want, allBuffers(t, ref, rts))
	}
	for _, c := range []struct {
		from, to runtime.Backend
		target   string // "fresh", "started" (its backend running) or "closed"
		at       int
	}{
		{runtime.CPU, runtime.CPU, "fresh", at},
		{runtime.CPU, runtime.Go, "fresh", at},
		{runtime.Go, runtime.CPU, "started", at},
		{runtime.CPU, runtime.CPU, "closed", at},
		{runtime.CPU, runtime.Go, "fresh", 0}, // saved before the first step
		{runtime.CUDA, runtime.CPU, "fresh", at},
		{runtime.CPU, runtime.CUDA, "started", at},
	} {
		name := string(c.from) + "-to-" + string(c.to) + "-" + c.target
		if (c.from == runtime.CUDA || c.to == runtime.CUDA) && !cudaWorks(t) {
			t.Logf("%s: skipped, the CUDA backend does not start here", name)
			continue
		}
		a, ats := openFiber(t, runtime.Options{Backend: c.from, Threads: 2}, theta)
		if err := a.SetHyper("lr", lr); err != nil {
			t.Fatal(err)
		}
		for _, g := range grads[:c.at] {
			if err := stepAll(a, ats, g); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(t.TempDir(), "fiber.ckpt")
		if err := a.Save(path); err != nil {
			t.Fatal(err)
		}

		// Every case resumes the same bytes (the backends agree bit for bit).
		b, bts := openFiber(t, runtime.Options{Backend: c.to, AllowResumeAgain: true}, theta)
		b.SetSeed(7)
		switch c.target {
		case "started", "closed":
			if err := bts[0].SetGrad(make([]float32, bts[0].Len)); err != nil {
				t.Fatal(err)
			}
			if c.target == "closed" {
				b.Close()
			}
		}
		if err := b.Load(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b.Steps() != c.at || b.Seed() != 2026 {
			t.Fatalf("%s: loaded Steps %d Seed %d, want %d 2026", name, b.Steps(), b.Seed(), c.at)
		}
		if v, _ := b.Hyper("lr"); v != lr {
			t.Fatalf("%s: loaded lr %v, want %v", name, v, lr)
		}
		if c.at > 0 && !sameBuffers(allBuffers(t, b, bts), want[c.at-1]) {
			t.Fatalf("%s: the loaded buffers differ from the saved", name)
		}
		for s := c.at; s < steps; s++ {
			if err := stepAll(b, bts, grads[s]); err != nil {
				t.Fatal(err)
			}
			if err := stepAll(a, ats, grads[s]); err != nil {
				t.Fatal(err)
			}
			if !sameBuffers(allBuffers(t, b, bts), want[s]) {
				t.Fatalf("%s: after step %d the resumed run differs from the uninterrupted one", name, s)
			}
			if !sameBuffers(allBuffers(t, a, ats), want[s]) {
				t.Fatalf("%s: after step %d the run that saved differs from the uninterrupted one", name, s)
			}
		}
		if b.Steps() != steps || b.Backend() != c.to {
			t.Errorf("%s: %d steps on %s, want %d on %s", name, b.Steps(), b.Backend(), steps, c.to)
		}
	}
}

// cudaWorks reports whether the CUDA backend starts here.
func cudaWorks(t *testing.T) bool {
	t.Helper()
	o, err := runtime.Open(kernelDir(t, "fiber"), runtime.Options{Backend: runtime.CUDA})
	if err != nil {
		return false
	}
	defer o.Close()
	tn, err := o.Register("w", []float32{1})
	return err == nil && tn.SetGrad([]float32{0}) == nil
}

// TestCheckpointNoiseNotReplayed shows that the resumed optimizer's next
// step draws the noise of step 3, where the checkpoint was taken, and not
// that of step 0, which an optimizer restarting its counter would draw
// again. With dp_sgd at lr = 1 and zero gradients a step subtracts exactly
// the noise, which rng.Privatize computes independently.
func TestCheckpointNoiseNotReplayed(t *testing.T) {
	const at = 3
	theta, _ := inputs(0)
	zero := make([]float32, len(theta))
	dir := kernelDir(t, "dp_sgd")
	open := func(params []float32) (*runtime.Optimizer, []*runtime.Tensor) {
		o, ts := openSized(t, dir, runtime.Options{}, tensorSizes, params)
		if err := o.SetHyper("lr", 1); err != nil {
			t.Fatal(err)
		}
		return o, ts
	}
	noise := func(step uint32) []float32 {
		z := make([]float32, len(theta))
		rng.Privatize(z, zero, rng.SigmaW(testDP.SigmaW2()), 2026, step, 0)
		return z
	}
	minus := func(p, z []float32) []float32 {
		out := make([]float32, len(p))
		for i := range p {
			out[i] = p[i] - z[i]
		}
		return out
	}

	a, ats := open(theta)
	for range at {
		if err := stepAll(a, ats, zero); err != nil {
			t.Fatal(err)
		}
	}
	var ck bytes.Buffer
	if err := a.SaveTo(&ck); err != nil {
		t.Fatal(err)
	}
	p3 := flatParams(t, ats)
	if err := stepAll(a, ats, zero); err != nil {
		t.Fatal(err)
	}
	uninterrupted := flatParams(t, ats)

	b, bts := open(theta)
	if err := b.LoadFrom(bytes.NewReader(ck.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := stepAll(b, bts, zero); err != nil {
		t.Fatal(err)
	}
	resumed := flatParams(t, bts)

	// The wrong resume: the checkpoint's parameters in a fresh optimizer,
	// whose counter starts again at 0.
	w, wts := open(p3)
	if err := stepAll(w, wts, zero); err != nil {
		t.Fatal(err)
	}
	restarted := flatParams(t, wts)

	if !sameBits(resumed, uninterrupted) {
		t.Fatal("the resumed step differs from the uninterrupted step 3")
	}
	if !sameBits(resumed, minus(p3, noise(at))) {
		t.Fatal("the resumed step did not subtract the noise of step 3")
	}
	if !sameBits(restarted, minus(p3, noise(0))) {
		t.Fatal("the restarted optimizer did not subtract the noise of step 0")
	}
	same := 0
	for i := range resumed {
		if resumed[i] == restarted[i] {
			same++
		}
	}
	if same > len(resumed)/100 {
		t.Fatalf("the resumed and the restarted step agree on %d of %d coordinates: the noise of step 0 was replayed", same, len(resumed))
	}

	// The same with fiber: a checkpoint whose counter was rewound (an
	// intact file saying step 0) draws step 0's noise again and leaves the
	// uninterrupted trajectory; the true one stays on it.
	theta, grads := inputs(at + 1)
	f, fts := openFiber(t, runtime.Options{}, theta)
	for _, g := range grads[:at] {
		if err := stepAll(f, fts, g); err != nil {
			t.Fatal(err)
		}
	}
	data := saveBytes(t, f)
	if err := stepAll(f, fts, grads[at]); err != nil {
		t.Fatal(err)
	}
	rewound := rewrite(t, data, func(h map[string]any) { h["step"] = 0 })
	for _, c := range []struct {
		name string
		data []byte
		same bool
	}{{"resumed", data, true}, {"rewound", rewound, false}} {
		o, ts := openFiber(t, runtime.Options{}, theta)
		if err := o.LoadFrom(bytes.NewReader(c.data)); err != nil {
			t.Fatal(err)
		}
		if err := stepAll(o, ts, grads[at]); err != nil {
			t.Fatal(err)
		}
		if got := sameBuffers(allBuffers(t, o, ts), allBuffers(t, f, fts)); got != c.same {
			t.Errorf("%s: equal to the uninterrupted run: %v, want %v", c.name, got, c.same)
		}
	}
}

// target is an optimizer a bad checkpoint is loaded into, and what it
// must still be afterwards.
type target struct {
	o     *runtime.Optimizer
	ts    []*runtime.Tensor
	theta []float32
}

// unchanged fails the test if anything visible in the target changed; it
// looks only at what does not start the backend.
func (tg target) unchanged(t *testing.T, what string) {
	t.Helper()
	lr, _ := tg.o.Hyper("lr")
	if tg.o.Steps() != 0 || tg.o.Seed() != 2026 || lr != 0.001 || tg.o.Backend() != "" || !sameBits(flatParams(t, tg.ts), tg.theta) {
		t.Fatalf("%s changed the optimizer: Steps %d, Seed %d, lr %v, backend %q, parameters changed: %v",
			what, tg.o.Steps(), tg.o.Seed(), lr, tg.o.Backend(), !sameBits(flatParams(t, tg.ts), tg.theta))
	}
}

// small is a fiber checkpoint small enough to truncate at every length and
// to corrupt at every byte, and a fresh optimizer it loads into.
func small(t *testing.T) (data []byte, tg target) {
	t.Helper()
	sizes := []int{3, 6}
	theta, grads := inputs(2)
	a, ats := openSized(t, kernelDir(t, "fiber"), runtime.Options{}, sizes, theta)
	for _, g := range grads {
		if err := stepAll(a, ats, g[:9]); err != nil {
			t.Fatal(err)
		}
	}
	o, ts := openSized(t, kernelDir(t, "fiber"), runtime.Options{}, sizes, theta)
	return saveBytes(t, a), target{o, ts, theta[:9]}
}

// TestCheckpointTruncated cuts checkpoints short: at every length for a
// small one, in every region of a full one. Each Load fails as truncated
// and changes nothing; the intact file then loads.
func TestCheckpointTruncated(t *testing.T) {
	data, tg := small(t)
	path := filepath.Join(t.TempDir(), "small.ckpt")
	for n := range len(data) {
		writeFile(t, path, data[:n])
		err := tg.o.Load(path)
		if !errors.Is(err, runtime.ErrCheckpointTruncated) || !strings.HasPrefix(err.Error(), "runtime: load "+path+": truncated") {
			t.Fatalf("%d of %d bytes: got %v, want a truncated error", n, len(data), err)
		}
		if err := tg.o.LoadFrom(bytes.NewReader(data[:n])); !errors.Is(err, runtime.ErrCheckpointTruncated) {
			t.Fatalf("LoadFrom, %d of %d bytes: got %v, want a truncated error", n, len(data), err)
		}
		tg.unchanged(t, "a truncated checkpoint")
	}
	writeFile(t, path, data)
	if err := tg.o.Load(path); err != nil || tg.o.Steps() != 2 {
		t.Fatalf("the intact checkpoint: %v, %d steps", err, tg.o.Steps())
	}

	// A full-size checkpoint, cut in each region.
	theta, grads := inputs(1)
	a, ats := openFiber(t, runtime.Options{}, theta)
	if err := stepAll(a, ats, grads[0]); err != nil {
		t.Fatal(err)
	}
	data = saveBytes(t, a)
	hl, dl := regions(data)
	o, ts := openFiber(t, runtime.Options{}, theta)
	tg = target{o, ts, theta}
	for _, c := range []struct {
		name string
		n    int
	}{
		{"empty", 0}, {"1 byte", 1}, {"within the magic", 11}, {"the magic", 20},
		{"within the version", 22}, {"within the lengths", 30}, {"within the CRC", 38},
		{"the preamble", preambleLen}, {"within the header", preambleLen + hl/2},
		{"the header", preambleLen + hl}, {"within the data", preambleLen + hl + dl/2},
		{"the data", preambleLen + hl + dl}, {"within the checksum", len(data) - sumLen/2},
		{"all but the last byte", len(data) - 1},
	} {
		p := filepath.Join(t.TempDir(), "fiber.ckpt")
		writeFile(t, p, data[:c.n])
		err := o.Load(p)
		if !errors.Is(err, runtime.ErrCheckpointTruncated) || !strings.Contains(err.Error(), ": truncated") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s (%d of %d bytes): got %v, want a one-line truncated error", c.name, c.n, len(data), err)
		}
		tg.unchanged(t, c.name)
	}
	if err := o.LoadFrom(bytes.NewReader(data)); err != nil || !sameBuffers(allBuffers(t, o, ts), allBuffers(t, a, ats)) {
		t.Fatalf("the intact checkpoint: %v", err)
	}
}

// TestCheckpointCorrupted flips bytes: every byte of a small checkpoint,
// and one in each region of a full one. The magic reads as not a
// checkpoint, the version as another version, anything else as corrupted;
// nothing changes.
func TestCheckpointCorrupted(t *testing.T) {
	data, tg := small(t)
	kindAt := func(i int) error {
		switch {
		case i < 20:
			return runtime.ErrNotCheckpoint
		case i < 24:
			return runtime.ErrCheckpointVersion
		}
		return runtime.ErrCheckpointCorrupted
	}
	path := filepath.Join(t.TempDir(), "small.ckpt")
	for i := range data {
		for _, x := range []byte{0x01, 0x80} {
			bad := slices.Clone(data)
			bad[i] ^= x
			writeFile(t, path, bad)
			err := tg.o.Load(path)
			if !errors.Is(err, kindAt(i)) || !strings.HasPrefix(err.Error(), "runtime: load "+path+": ") {
				t.Fatalf("byte %d of %d ^ %#x: got %v, want %v", i, len(data), x, err, kindAt(i))
			}
		}
		tg.unchanged(t, "a corrupted checkpoint")
	}

	theta, grads := inputs(1)
	a, ats := openFiber(t, runtime.Options{}, theta)
	if err := stepAll(a, ats, grads[0]); err != nil {
		t.Fatal(err)
	}
	data = saveBytes(t, a)
	hl, dl := regions(data)
	o, ts := openFiber(t, runtime.Options{}, theta)
	tg = target{o, ts, theta}
	future := slices.Clone(data)
	future[20] = 2
	for _, c := range []struct {
		name string
		i    int
		want string
	}{
		{"magic", 3, "not a fibergen checkpoint"},
		{"version", 20, "checkpoint format version 0, this fibergen reads 1"},
		{"header length", 25, "corrupted"},
		{"data length", 29, "corrupted"},
		{"preamble CRC", 37, "corrupted"},
		{"header", preambleLen + hl/2, "corrupted"},
		{"data", preambleLen + hl + dl/3, "corrupted"},
		{"checksum", len(data) - 5, "corrupted"},
	} {
		bad := slices.Clone(data)
		bad[c.i] ^= 1
		p := filepath.Join(t.TempDir(), "fiber.ckpt")
		writeFile(t, p, bad)
		err := o.Load(p)
		if err == nil || !strings.HasPrefix(err.Error(), "runtime: load "+p+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		tg.unchanged(t, c.name)
	}
	// Load takes the whole file: bytes after the end are corruption (LoadFrom
	// reads the checkpoint's bytes only).
	p := filepath.Join(t.TempDir(), "fiber.ckpt")
	writeFile(t, p, append(slices.Clone(data), 0))
	if err := o.Load(p); !errors.Is(err, runtime.ErrCheckpointCorrupted) || !strings.Contains(err.Error(), "corrupted: 1 bytes after the checkpoint's end") {
		t.Errorf("a byte appended: got %v", err)
	}
	tg.unchanged(t, "a byte appended")
	for _, c := range []struct {
		name string
		data []byte
		kind error
		want string
	}{
		{"another version", reseal(future), runtime.ErrCheckpointVersion, "checkpoint format version 2, this fibergen reads 1"},
		{"not JSON", rewriteRaw(data, []byte("{]")), runtime.ErrCheckpointCorrupted, "malformed header"},
		{"an unknown field", rewrite(t, data, func(h map[string]any) { h["nope"] = 1 }), runtime.ErrCheckpointCorrupted, "malformed header"},
		{"wrong n", rewrite(t, data, func(h map[string]any) { h["n"] = 5 }), runtime.ErrCheckpointCorrupted, "do not make"},
		{"a text file", []byte("step=3 seed=2026\nparameters follow\n"), runtime.ErrNotCheckpoint, "not a fibergen checkpoint"},
	} {
		err := o.LoadFrom(bytes.NewReader(c.data))
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		tg.unchanged(t, c.name)
	}
}

// rewriteRaw replaces a checkpoint's header bytes and reseals it.
func rewriteRaw(data, header []byte) []byte {
	hl, _ := regions(data)
	out := slices.Clone(data[:preambleLen])
	binary.LittleEndian.PutUint32(out[24:], uint32(len(header)))
	out = append(out, header...)
	return reseal(append(out, data[preambleLen+hl:]...))
}

// TestCheckpointMismatch loads intact checkpoints that do not fit: of
// another optimizer, of another build, of another shard, of another
// tensor layout, with other hypers; and any checkpoint into an optimizer
// that has stepped. Each is refused and changes nothing.
func TestCheckpointMismatch(t *testing.T) {
	theta, grads := inputs(2)
	fiberDir := kernelDir(t, "fiber")
	stepped := func(o *runtime.Optimizer, ts []*runtime.Tensor) []byte {
		t.Helper()
		if err := stepAll(o, ts, grads[0]); err != nil {
			t.Fatal(err)
		}
		return saveBytes(t, o)
	}
	ck := stepped(openFiber(t, runtime.Options{}, theta))

	sgd, sts := openSized(t, kernelDir(t, "dp_sgd"), runtime.Options{}, tensorSizes, theta)
	ofSGD := stepped(sgd, sts)

	// Another build: the same manifest with one more byte.
	other := filepath.Join(t.TempDir(), "fiber")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(fiberDir, "fiber.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(other, "fiber.json"), append(m, '\n'))
	ofOther := stepped(openSized(t, other, runtime.Options{Backend: runtime.Go}, tensorSizes, theta))
	ofShard := stepped(openSized(t, fiberDir, runtime.Options{Offset: 4}, tensorSizes, theta))
	sizes := slices.Clone(tensorSizes)
	slices.Reverse(sizes)
	ofLayout := stepped(openSized(t, fiberDir, runtime.Options{}, sizes, theta))
	ofFewer := stepped(openSized(t, fiberDir, runtime.Options{}, tensorSizes[:3], theta))

	o, ts := openFiber(t, runtime.Options{}, theta)
	tg := target{o, ts, theta}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"dp_sgd", ofSGD, "checkpoint of dp_sgd, this optimizer is fiber"},
		{"another build", ofOther, "checkpoint made with another build of fiber (manifest hash "},
		{"another manifest hash", rewrite(t, ck, func(h map[string]any) { h["manifest_sha256"] = strings.Repeat("0", 64) }),
			"another build of fiber (manifest hash 000000000000…"},
		{"another shard", ofShard, "checkpoint of the shard at offset 4, this optimizer's offset is 0"},
		{"another layout", ofLayout, "tensor layout differs: checkpoint has 5 tensors over 5134 coordinates, this optimizer 5 over 5134; tensor 0 is a[0:1024) there, a[0:7) here"},
		{"fewer tensors", ofFewer, "tensor layout differs: checkpoint has 3 tensors over 4107 coordinates"},
		{"a renamed tensor", rewrite(t, ck, func(h map[string]any) { h["tensors"].([]any)[2].(map[string]any)["name"] = "z" }),
			"tensor 2 is z[8:4107) there, c[8:4107) here"},
		{"a hyper missing", rewrite(t, ck, func(h map[string]any) { delete(h["hypers"].(map[string]any), "beta2") }),
			"checkpoint has no value for the hyper beta2"},
		{"a hyper more", rewrite(t, ck, func(h map[string]any) { h["hypers"].(map[string]any)["mu"] = 1 }),
			"checkpoint has hypers that fiber has not: [mu]"},
		{"a hyper out of range", rewrite(t, ck, func(h map[string]any) { h["hypers"].(map[string]any)["beta1"] = 2 }),
			"checkpoint's hypers: "},
		{"bad DP settings", rewrite(t, ck, func(h map[string]any) { h["dp"].(map[string]any)["batch_size"] = 0 }),
			"checkpoint's DP settings"},
	} {
		err := o.LoadFrom(bytes.NewReader(c.data))
		if !errors.Is(err, runtime.ErrCheckpointMismatch) || !strings.HasPrefix(err.Error(), "runtime: load checkpoint: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		tg.unchanged(t, c.name)
	}

	// Into an optimizer that has stepped: refused, whatever the file.
	if err := stepAll(o, ts, grads[1]); err != nil {
		t.Fatal(err)
	}
	before := allBuffers(t, o, ts)
	path := filepath.Join(t.TempDir(), "fiber.ckpt")
	writeFile(t, path, ck)
	err = o.Load(path)
	if !errors.Is(err, runtime.ErrStepped) || !strings.Contains(err.Error(), "runtime: load "+path+": the optimizer has stepped (Steps() = 1)") {
		t.Errorf("Load after a step: got %v", err)
	}
	if o.Steps() != 1 || o.Seed() != 2026 || !sameBuffers(allBuffers(t, o, ts), before) {
		t.Error("the refused Load changed the optimizer")
	}
	if err := o.Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, runtime.ErrStepped) {
		t.Errorf("Load after a step of a missing file: got %v, want ErrStepped", err)
	}
	fresh, _ := openFiber(t, runtime.Options{}, theta)
	if err := fresh.Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: got %v", err)
	}
}

// TestCheckpointSaveAtomic saves into a directory: only the checkpoint is
// there afterwards, with mode 0600; a second Save replaces it; a Save that
// fails leaves the old file and no temporary one.
func TestCheckpointSaveAtomic(t *testing.T) {
	theta, grads := inputs(2)
	o, ts := openFiber(t, runtime.Options{}, theta)
	dir := t.TempDir()
	path := filepath.Join(dir, "fiber.ckpt")
	listing := func() []string {
		t.Helper()
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	steps := func(path string) int {
		t.Helper()
		f, _ := openFiber(t, runtime.Options{AllowResumeAgain: true}, theta) // a peek, not a resume
		if err := f.Load(path); err != nil {
			t.Fatal(err)
		}
		return f.Steps()
	}
	if err := stepAll(o, ts, grads[0]); err != nil {
		t.Fatal(err)
	}
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the checkpoint: %v, %v; want mode 0600", fi, err)
	}
	if err := stepAll(o, ts, grads[1]); err != nil {
		t.Fatal(err)
	}
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	if got := listing(); !slices.Equal(got, []string{"fiber.ckpt"}) || steps(path) != 2 {
		t.Fatalf("after two saves the directory holds %v, the checkpoint %d steps; want [fiber.ckpt] at step 2", got, steps(path))
	}
	old, _ := os.ReadFile(path)

	// The target is a directory: refused before anything is written.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.Save(sub); err == nil || err.Error() != "runtime: save "+sub+": it is a directory, not a regular file: fibergen replaces only regular files" {
		t.Errorf("Save over a directory: got %v", err)
	}
	if got := listing(); !slices.Equal(got, []string{"fiber.ckpt", "sub"}) {
		t.Errorf("after a failed Save the directory holds %v", got)
	}
	if err := o.Save(filepath.Join(dir, "none", "fiber.ckpt")); err == nil {
		t.Error("Save into a missing directory succeeded")
	}

	if os.Geteuid() == 0 {
		t.Log("running as root: skipping the read-only directory")
	} else {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		if err := o.Save(path); !errors.Is(err, os.ErrPermission) {
			t.Errorf("Save into a read-only directory: got %v", err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
			t.Error("a failed Save changed the old checkpoint")
		}
		if got := listing(); !slices.Equal(got, []string{"fiber.ckpt", "sub"}) {
			t.Errorf("after a failed Save the directory holds %v", got)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Error("a failed Save changed the old checkpoint")
	}
	if err := o.SaveTo(failingWriter{}); err == nil || !strings.HasPrefix(err.Error(), "runtime: save: ") {
		t.Errorf("SaveTo a failing writer: got %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestCheckpointResumeScalars: doppler's scalars (its filter's step
// response c_t, a recursion the host advances) come back from a checkpoint
// through its step counter and hypers, on a backend that saw none of the
// steps before, and give the uninterrupted run's bits.
func TestCheckpointResumeScalars(t *testing.T) {
	const steps, at = 12, 5
	theta, grads := inputs(steps)
	dir := kernelDir(t, "doppler")
	ref, rts := openSized(t, dir, runtime.Options{}, tensorSizes, theta)
	a, ats := openSized(t, dir, runtime.Options{Backend: runtime.Go}, tensorSizes, theta)
	for _, g := range grads[:at] {
		if err := errors.Join(stepAll(ref, rts, g), stepAll(a, ats, g)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "doppler.ckpt")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	b, bts := openSized(t, dir, runtime.Options{Backend: runtime.CPU}, tensorSizes, theta)
	if err := b.Load(path); err != nil {
		t.Fatal(err)
	}
	for s := at; s < steps; s++ {
		if err := errors.Join(stepAll(ref, rts, grads[s]), stepAll(b, bts, grads[s])); err != nil {
			t.Fatal(err)
		}
		if !sameBuffers(allBuffers(t, b, bts), allBuffers(t, ref, rts)) {
			t.Fatalf("after step %d the resumed run differs from the uninterrupted one", s)
		}
	}
}
