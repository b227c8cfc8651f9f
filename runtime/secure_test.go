package runtime_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/generated/dp_sgd"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
)

// The secure noise mode (Options.SecureNoise) as the runtime plumbs it: the
// key from the OS, the seed refused, the key shared between ranks, the
// mode in checkpoints and the key a load derives. The noise itself is
// checked against rng.Stream, the reference of both schemes, on the
// backends that draw secure noise.

// secureN is the coordinates of the secure tests' one tensor: several
// ChaCha blocks, and a partial one at the end.
const secureN = 1003

// secureBackend opens dp_sgd one way: every backend draws secure noise.
type secureBackend struct {
	name string
	open func(t *testing.T, opts runtime.Options) (*runtime.Optimizer, error)
}

var secureBackends = []secureBackend{
	{"go (interpreter)", func(_ *testing.T, opts runtime.Options) (*runtime.Optimizer, error) {
		opts.Backend = runtime.Go
		return runtime.Open("../generated/dp_sgd", opts)
	}},
	{"go (generated package)", func(_ *testing.T, opts runtime.Options) (*runtime.Optimizer, error) {
		return runtime.OpenPackage(runtime.Package{Manifest: dp_sgd.Manifest(), Step: dp_sgd.StepKernel}, opts)
	}},
	{"cpu (host kernel)", func(t *testing.T, opts runtime.Options) (*runtime.Optimizer, error) {
		opts.Backend = runtime.CPU
		return runtime.Open(kernelDir(t, "dp_sgd"), opts)
	}},
	{"ptxsim", func(t *testing.T, opts runtime.Options) (*runtime.Optimizer, error) {
		opts.Backend = runtime.PTXSim
		return runtime.Open(ptxDir(t, "dp_sgd"), simOptions(t, opts))
	}},
}

// openSGD opens dp_sgd on b with testDP, lr = 1 (a step on a zero gradient
// then subtracts exactly the noise) and one tensor of theta.
func openSGD(t *testing.T, b secureBackend, opts runtime.Options, theta []float32) (*runtime.Optimizer, *runtime.Tensor) {
	t.Helper()
	opts.Threads = 2
	o, err := b.open(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	if err := o.SetDP(testDP); err != nil {
		t.Fatal(err)
	}
	if err := o.SetHyper("lr", 1); err != nil {
		t.Fatal(err)
	}
	tn, err := o.Register("w", theta)
	if err != nil {
		t.Fatal(err)
	}
	return o, tn
}

// zeroStep steps o on a zero gradient.
func zeroStep(t *testing.T, o *runtime.Optimizer, tn *runtime.Tensor) {
	t.Helper()
	if err := tn.SetGrad(make([]float32, tn.Len)); err != nil {
		t.Fatal(err)
	}
	if err := o.TrustClippedGradient(); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(); err != nil {
		t.Fatal(err)
	}
}

func params(t *testing.T, tn *runtime.Tensor) []float32 {
	t.Helper()
	p, err := tn.Params()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// minusNoise is p minus the noise s draws at coordinates offset.. .
func minusNoise(p []float32, s rng.Stream, offset uint64) []float32 {
	z := make([]float32, len(p))
	s.Privatize(z, make([]float32, len(p)), rng.SigmaW(testDP.SigmaW2()), offset)
	out := make([]float32, len(p))
	for i := range p {
		out[i] = p[i] - z[i]
	}
	return out
}

func secureTheta() []float32 {
	theta, _ := inputs(0)
	return theta[:secureN]
}

func testKey(i uint64) rng.Key {
	return rng.Key{0x0123456789abcdef ^ i, 0xfedcba9876543210, 0x0f1e2d3c4b5a6978 + i, 0x8877665544332211}
}

// TestSecureOpen: the mode and its scheme's version, a key from the OS
// that differs from open to open, no seed, and SetSeed refused saying why.
func TestSecureOpen(t *testing.T) {
	b := secureBackends[0]
	p, _ := openSGD(t, b, runtime.Options{}, secureTheta())
	if m, v := p.NoiseMode(); m != rng.Philox || v != rng.Version {
		t.Errorf("default NoiseMode() = %v, %q; want philox, %q", m, v, rng.Version)
	}
	s1, _ := openSGD(t, b, runtime.Options{SecureNoise: true}, secureTheta())
	s2, _ := openSGD(t, b, runtime.Options{SecureNoise: true}, secureTheta())
	if m, v := s1.NoiseMode(); m != rng.Secure || v != rng.SecureVersion {
		t.Errorf("secure NoiseMode() = %v, %q; want secure, %q", m, v, rng.SecureVersion)
	}
	if s1.Seed() != 0 {
		t.Errorf("a secure optimizer's Seed() = %d, want 0 (it has none)", s1.Seed())
	}
	k1, err1 := s1.ShareKey()
	k2, err2 := s2.ShareKey()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if k1 == k2 || k1 == (rng.Key{}) {
		t.Errorf("two secure opens have the keys %x and %x: want two different keys from the OS", k1, k2)
	}
	err := s1.SetSeed(7)
	if err == nil || !strings.Contains(err.Error(), "secure noise takes no seed") || !strings.Contains(err.Error(), "subtractable") {
		t.Errorf("SetSeed in secure mode: %v; want a refusal saying why", err)
	}
	if k, _ := s1.ShareKey(); k != k1 || s1.Seed() != 0 {
		t.Error("the refused SetSeed changed the key or the seed")
	}
}

// TestSecureKeySource: where the operating system's source fails, a secure
// Open fails saying so, and there is no weaker fallback; a philox Open
// does not need it.
func TestSecureKeySource(t *testing.T) {
	restore := runtime.SetRandomKey(func() (rng.Key, error) {
		return rng.Key{}, errors.New("secure noise: the operating system's random source: getrandom: short read")
	})
	defer restore()
	o, err := runtime.Open("../generated/dp_sgd", runtime.Options{Backend: runtime.Go, SecureNoise: true})
	if err == nil || o != nil {
		t.Fatalf("secure Open without a key source: %v, %v; want an error and no optimizer", o, err)
	}
	for _, want := range []string{"secure noise", "short read", "operating system alone"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("secure Open without a key source: %q; want it to say %q", err, want)
		}
	}
	p, err := runtime.Open("../generated/dp_sgd", runtime.Options{Backend: runtime.Go})
	if err != nil {
		t.Fatalf("philox Open needs no key: %v", err)
	}
	p.Close()
}

// TestSecureNoise: on every backend that draws secure noise, a secure step
// adds exactly rng.Stream's secure noise of the key, step by step, which
// is not the philox noise; the backends agree bit for bit.
func TestSecureNoise(t *testing.T) {
	theta := secureTheta()
	key := testKey(1)
	var first []float32
	for _, b := range secureBackends {
		t.Run(b.name, func(t *testing.T) {
			o, tn := openSGD(t, b, runtime.Options{SecureNoise: true}, theta)
			if err := o.SetKey(key); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(theta)
			for step := range uint32(3) {
				zeroStep(t, o, tn)
				want = minusNoise(want, rng.Stream{Mode: rng.Secure, Key: key, Step: step}, 0)
				got := params(t, tn)
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: the parameters are not θ minus the secure noise of rng.Stream", step)
				}
				if step == 0 && slices.Equal(got, minusNoise(theta, rng.Stream{Mode: rng.Philox, Step: 0}, 0)) {
					t.Fatal("the secure step drew philox noise")
				}
			}
			if first == nil {
				first = want
			} else if !slices.Equal(want, first) {
				t.Errorf("%s differs from %s", b.name, secureBackends[0].name)
			}
		})
	}
}

// TestSecureSharedKey: ranks that agree on rank 0's key (ShareKey, SetKey)
// and step their shards draw the noise one optimizer over the whole vector
// draws with that key.
func TestSecureSharedKey(t *testing.T) {
	theta := secureTheta()
	for _, b := range secureBackends {
		t.Run(b.name, func(t *testing.T) {
			whole, wt := openSGD(t, b, runtime.Options{SecureNoise: true}, theta)
			key, err := whole.ShareKey()
			if err != nil {
				t.Fatal(err)
			}
			const cut = 517
			r0, t0 := openSGD(t, b, runtime.Options{SecureNoise: true}, theta[:cut])
			r1, t1 := openSGD(t, b, runtime.Options{SecureNoise: true, Offset: cut}, theta[cut:])
			for _, r := range []*runtime.Optimizer{r0, r1} {
				if err := r.SetKey(key); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				zeroStep(t, whole, wt)
				zeroStep(t, r0, t0)
				zeroStep(t, r1, t1)
			}
			if !slices.Equal(append(params(t, t0), params(t, t1)...), params(t, wt)) {
				t.Error("the shards of ranks sharing a key do not draw the noise of the whole vector")
			}
		})
	}
}

// TestSecureKeyRefusals: ShareKey and SetKey in philox mode, after the
// first step and after a load; SetKey of the zero key. Each is refused and
// changes nothing.
func TestSecureKeyRefusals(t *testing.T) {
	b := secureBackends[0]
	theta := secureTheta()
	p, _ := openSGD(t, b, runtime.Options{}, theta)
	if _, err := p.ShareKey(); err == nil || !strings.Contains(err.Error(), "has a seed and no key") {
		t.Errorf("ShareKey in philox mode: %v", err)
	}
	if err := p.SetKey(testKey(1)); err == nil || !strings.Contains(err.Error(), "has a seed and no key") {
		t.Errorf("SetKey in philox mode: %v", err)
	}

	s, tn := openSGD(t, b, runtime.Options{SecureNoise: true}, theta)
	before, _ := s.ShareKey()
	if err := s.SetKey(rng.Key{}); err == nil || !strings.Contains(err.Error(), "zero key") {
		t.Errorf("SetKey of the zero key: %v", err)
	}
	if k, _ := s.ShareKey(); k != before {
		t.Error("the refused SetKey changed the key")
	}
	ck := saveBytes(t, s)
	zeroStep(t, s, tn)
	if _, err := s.ShareKey(); err == nil || !strings.Contains(err.Error(), "before the first step") {
		t.Errorf("ShareKey after a step: %v", err)
	}
	if err := s.SetKey(testKey(2)); err == nil || !strings.Contains(err.Error(), "before the first step") {
		t.Errorf("SetKey after a step: %v", err)
	}

	l, _ := openSGD(t, b, runtime.Options{SecureNoise: true, AllowResumeAgain: true}, theta)
	if err := l.LoadFrom(bytes.NewReader(ck)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ShareKey(); err == nil || !strings.Contains(err.Error(), "before a checkpoint is loaded") {
		t.Errorf("ShareKey after a load: %v", err)
	}
	if err := l.SetKey(testKey(2)); err == nil || !strings.Contains(err.Error(), "before a checkpoint is loaded") {
		t.Errorf("SetKey after a load: %v", err)
	}
}

// keyTexts are the ways a key could be written into a checkpoint: its 32
// bytes, its words in decimal and in hex.
func keyTexts(k rng.Key) [][]byte {
	raw := make([]byte, 32)
	for i, w := range k {
		binary.LittleEndian.PutUint64(raw[8*i:], w)
	}
	out := [][]byte{raw, []byte(hex.EncodeToString(raw))}
	for _, w := range k {
		out = append(out, []byte(fmt.Sprint(w)), []byte(fmt.Sprintf("%x", w)))
	}
	return out
}

// TestSecureCheckpoint: a secure checkpoint records the mode and holds no
// key and no seed; a philox one reads as before secure mode (no
// noise_mode), and CheckpointInfo names each one's mode.
func TestSecureCheckpoint(t *testing.T) {
	b := secureBackends[0]
	s, tn := openSGD(t, b, runtime.Options{SecureNoise: true}, secureTheta())
	key, _ := s.ShareKey()
	zeroStep(t, s, tn)
	ck := saveBytes(t, s)
	h := header(t, ck)
	if h["noise_mode"] != "secure" || fmt.Sprint(h["seed"]) != "0" {
		t.Errorf("a secure checkpoint's header has noise_mode %v and seed %v; want secure and 0", h["noise_mode"], h["seed"])
	}
	for _, text := range keyTexts(key) {
		if bytes.Contains(ck, text) {
			t.Errorf("the secure checkpoint holds the key (as %q)", text)
		}
	}
	info, err := s.CheckpointInfo(bytes.NewReader(ck))
	if err != nil || info.NoiseMode != "secure" || info.Seed != 0 {
		t.Errorf("CheckpointInfo of a secure checkpoint: %+v, %v", info, err)
	}

	p, pt := openSGD(t, b, runtime.Options{}, secureTheta())
	zeroStep(t, p, pt)
	pk := saveBytes(t, p)
	if _, ok := header(t, pk)["noise_mode"]; ok {
		t.Error("a philox checkpoint has a noise_mode: it should read as before secure mode")
	}
	if info, err := p.CheckpointInfo(bytes.NewReader(pk)); err != nil || info.NoiseMode != "philox" {
		t.Errorf("CheckpointInfo of a philox checkpoint: %+v, %v", info, err)
	}
}

// header decodes a checkpoint's JSON header.
func header(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var h map[string]any
	rewrite(t, data, func(m map[string]any) { h = m })
	return h
}

// TestCheckpointNoiseMode: a checkpoint of one mode does not load into an
// optimizer of the other, nor one of an unknown mode or a secure one with
// a seed: each error names the modes, and nothing changes — the
// parameters, the step, the key, the resume record (the right optimizer
// loads the checkpoint after). A philox checkpoint that says so
// explicitly loads as one that does not.
func TestCheckpointNoiseMode(t *testing.T) {
	b := secureBackends[0]
	theta := secureTheta()
	saved := func(opts runtime.Options) []byte {
		o, tn := openSGD(t, b, opts, theta)
		zeroStep(t, o, tn)
		return saveBytes(t, o)
	}
	secureCk, philoxCk := saved(runtime.Options{SecureNoise: true}), saved(runtime.Options{})
	cases := []struct {
		name   string
		opts   runtime.Options
		ck     []byte
		wants  []string
		loadOK runtime.Options // an optimizer that does load ck after the refusal
	}{
		{"secure into philox", runtime.Options{}, secureCk,
			[]string{"run in secure noise mode", "draws in philox mode", "with Options.SecureNoise"}, runtime.Options{SecureNoise: true}},
		{"philox into secure", runtime.Options{SecureNoise: true}, philoxCk,
			[]string{"run in philox noise mode", "draws in secure mode", "without Options.SecureNoise"}, runtime.Options{}},
		{"unknown mode", runtime.Options{}, rewrite(t, philoxCk, func(h map[string]any) { h["noise_mode"] = "fast" }),
			[]string{`noise mode "fast"`, "philox or secure"}, runtime.Options{}},
		{"secure with a seed", runtime.Options{SecureNoise: true}, rewrite(t, secureCk, func(h map[string]any) { h["seed"] = 42 }),
			[]string{"secure noise mode with a seed"}, runtime.Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, tn := openSGD(t, b, c.opts, theta)
			key, _ := o.ShareKey()
			err := o.LoadFrom(bytes.NewReader(c.ck))
			if !errors.Is(err, runtime.ErrCheckpointMismatch) {
				t.Fatalf("load: %v; want ErrCheckpointMismatch", err)
			}
			for _, want := range c.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("load: %q; want it to say %q", err, want)
				}
			}
			if k, _ := o.ShareKey(); o.Steps() != 0 || !slices.Equal(params(t, tn), theta) || k != key {
				t.Error("the refused load changed the optimizer")
			}
			if c.name == "unknown mode" || c.name == "secure with a seed" {
				return
			}
			r, _ := openSGD(t, b, c.loadOK, theta)
			if err := r.LoadFrom(bytes.NewReader(c.ck)); err != nil {
				t.Errorf("the refusal left a resume record, or the checkpoint does not load in its mode: %v", err)
			}
		})
	}
	t.Run("explicit philox", func(t *testing.T) {
		o, _ := openSGD(t, b, runtime.Options{}, theta)
		if err := o.LoadFrom(bytes.NewReader(rewrite(t, philoxCk, func(h map[string]any) { h["noise_mode"] = "philox" }))); err != nil {
			t.Error(err)
		}
	})
}

// TestSecureLoadRekeys: a load of a secure checkpoint sets the key to
// rng.DeriveKey(key, n), n counting the optimizer's loads: the resumed
// run's noise is not the stopped run's, two ranks that share a key and
// load one checkpoint derive one key, and a second load derives again.
func TestSecureLoadRekeys(t *testing.T) {
	b := secureBackends[0]
	theta := secureTheta()
	key := testKey(3)
	a, at := openSGD(t, b, runtime.Options{SecureNoise: true}, theta)
	if err := a.SetKey(key); err != nil {
		t.Fatal(err)
	}
	ck0 := saveBytes(t, a)
	zeroStep(t, a, at)
	zeroStep(t, a, at)
	ck := saveBytes(t, a)
	p2 := params(t, at)

	var ranks [][]float32
	for range 2 {
		r, rt := openSGD(t, b, runtime.Options{SecureNoise: true, AllowResumeAgain: true}, theta)
		if err := r.SetKey(key); err != nil {
			t.Fatal(err)
		}
		if err := r.LoadFrom(bytes.NewReader(ck)); err != nil {
			t.Fatal(err)
		}
		zeroStep(t, r, rt)
		ranks = append(ranks, params(t, rt))
	}
	want := minusNoise(p2, rng.Stream{Mode: rng.Secure, Key: rng.DeriveKey(key, 1), Step: 2}, 0)
	if !slices.Equal(ranks[0], want) {
		t.Error("the resumed step does not draw under DeriveKey(key, 1)")
	}
	if slices.Equal(ranks[0], minusNoise(p2, rng.Stream{Mode: rng.Secure, Key: key, Step: 2}, 0)) {
		t.Error("the resumed step draws under the stopped run's key")
	}
	if !slices.Equal(ranks[0], ranks[1]) {
		t.Error("two ranks sharing a key and loading one checkpoint draw different noise")
	}

	// Two loads (of step-0 checkpoints): the second derives from the first's key.
	r, rt := openSGD(t, b, runtime.Options{SecureNoise: true, AllowResumeAgain: true}, theta)
	if err := r.SetKey(key); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.LoadFrom(bytes.NewReader(ck0)); err != nil {
			t.Fatal(err)
		}
	}
	zeroStep(t, r, rt)
	if want := minusNoise(theta, rng.Stream{Mode: rng.Secure, Key: rng.DeriveKey(rng.DeriveKey(key, 1), 2), Step: 0}, 0); !slices.Equal(params(t, rt), want) {
		t.Error("the second load does not derive DeriveKey(DeriveKey(key, 1), 2)")
	}
}
