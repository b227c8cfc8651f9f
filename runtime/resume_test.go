package runtime_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibergen/fibergen/runtime"
)

// savedFiber steps fiber once from the seed and saves a checkpoint into a
// file of its own, returning its path and bytes: the same bytes for the
// same seed.
func savedFiber(t *testing.T, seed uint64) (path string, data []byte) {
	t.Helper()
	theta, grads := inputs(1)
	o, ts := openFiber(t, runtime.Options{}, theta)
	if err := errors.Join(o.SetSeed(seed), stepAll(o, ts, grads[0])); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "fiber.ckpt")
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// loadFresh loads the checkpoint at path into a fresh fiber.
func loadFresh(t *testing.T, opts runtime.Options, path string) error {
	theta, _ := inputs(0)
	o, _ := openFiber(t, opts, theta)
	return o.Load(path)
}

// TestResumeOnce: a checkpoint is resumed once, by its bytes, not its
// path: a copy, a symbolic or hard link and a stream of the same bytes are
// refused after the first resume, with ErrResumed naming the record;
// AllowResumeAgain overrides; a new checkpoint at the same path resumes.
func TestResumeOnce(t *testing.T) {
	path, data := savedFiber(t, 1)
	dir := filepath.Dir(path)
	if err := loadFresh(t, runtime.Options{}, path); err != nil {
		t.Fatal(err)
	}
	theta, _ := inputs(0)
	f, _ := openFiber(t, runtime.Options{}, theta)
	recDir, err := f.ResumeRecordDir()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	record := filepath.Join(recDir, hex.EncodeToString(sum[:]))
	if note, err := os.ReadFile(record); err != nil || !strings.Contains(string(note), "resumed from "+path) {
		t.Fatalf("the resume's record: %q, %v", note, err)
	}
	copyFile(t, path, filepath.Join(dir, "copy.ckpt"))
	if err := os.Symlink(path, filepath.Join(dir, "sym.ckpt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(dir, "hard.ckpt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fiber.ckpt", "copy.ckpt", "sym.ckpt", "hard.ckpt"} {
		err := loadFresh(t, runtime.Options{}, filepath.Join(dir, name))
		if !errors.Is(err, runtime.ErrResumed) || !strings.Contains(err.Error(), "delete "+record+" or open with Options.AllowResumeAgain") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := f.LoadFrom(bytes.NewReader(data)); !errors.Is(err, runtime.ErrResumed) {
		t.Errorf("LoadFrom of the bytes resumed from a file: %v", err)
	}
	if err := f.CheckCheckpoint(bytes.NewReader(data)); !errors.Is(err, runtime.ErrResumed) {
		t.Errorf("CheckCheckpoint of a checkpoint resumed: %v", err)
	}
	if info, err := f.CheckpointInfo(bytes.NewReader(data)); err != nil || info.Step != 1 || info.Seed != 1 || !strings.Contains(info.Resumed, "resumed from") {
		t.Errorf("CheckpointInfo: %+v, %v", info, err)
	}
	if err := loadFresh(t, runtime.Options{AllowResumeAgain: true}, filepath.Join(dir, "copy.ckpt")); err != nil {
		t.Errorf("a second resume with AllowResumeAgain: %v", err)
	}
	other, _ := savedFiber(t, 1) // the same run at the same step: the same bytes
	if err := loadFresh(t, runtime.Options{}, other); !errors.Is(err, runtime.ErrResumed) {
		t.Errorf("the same checkpoint saved again: %v", err)
	}
}

// TestResumeOnceAcrossProcesses: of several processes resuming one
// checkpoint at once, exactly one succeeds.
func TestResumeOnceAcrossProcesses(t *testing.T) {
	if path := os.Getenv("FIBERGEN_TEST_RESUME"); path != "" { // a child: the reference, with no kernel to build
		theta, _ := inputs(0)
		o, _ := openSized(t, "../generated/fiber", runtime.Options{Backend: runtime.Go}, tensorSizes, theta)
		if err := o.Load(path); err != nil {
			fmt.Println("refused:", err)
			return
		}
		fmt.Println("resumed")
		return
	}
	path, _ := savedFiber(t, 2)
	const procs = 6
	outs := make([]*bytes.Buffer, procs)
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestResumeOnceAcrossProcesses$", "-test.v")
		cmd.Env = append(os.Environ(), "FIBERGEN_TEST_RESUME="+path)
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	resumed, refused := 0, 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		resumed += strings.Count(outs[i].String(), "\nresumed\n")
		if strings.Contains(outs[i].String(), "checkpoint resumed before") || strings.Contains(outs[i].String(), "was resumed before") {
			refused++
		}
	}
	if resumed != 1 || refused != procs-1 {
		t.Errorf("%d processes resumed and %d were refused, want 1 and %d", resumed, refused, procs-1)
	}
}

// TestLoadOnlyCheckpoints: Load reads a regular file, and no more than a
// checkpoint of the optimizer can hold: /dev/zero and a FIFO are refused
// at once, and so is a file longer than any checkpoint of it.
func TestLoadOnlyCheckpoints(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, msg string }{
		{"/dev/zero", "not a regular file"},
		{fifo, "not a regular file"},
		{big, "more than any checkpoint of this optimizer holds"},
	} {
		done := make(chan error, 1)
		go func() { done <- loadFresh(t, runtime.Options{}, c.path) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Load %s: %v, want %q", c.path, err, c.msg)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Load %s did not return", c.path)
		}
	}
	theta, _ := inputs(0)
	o, _ := openFiber(t, runtime.Options{}, theta)
	huge := []byte("fibergen-checkpoint\n\x01\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x01")
	huge = append(huge, make([]byte, 4)...)
	if err := o.LoadFrom(bytes.NewReader(huge)); err == nil {
		t.Error("LoadFrom of a preamble announcing 2^56 bytes succeeded")
	}
}

// TestCheckpointStates: an optimizer on the trainer's buffers saves the
// digest of the states the trainer keeps beside its checkpoint, and
// resumes only with those very states: a flipped bit, states of another
// length, or none, are refused, changing nothing.
func TestCheckpointStates(t *testing.T) {
	theta, grads := inputs(2)
	o, bufs := callerBuffers(t, runtime.CPU, theta, 0, 100)
	copy(bufs[1], grads[0][:100])
	if err := errors.Join(o.GradientWritten(), o.TrustClippedGradient(), o.Step()); err != nil {
		t.Fatal(err)
	}
	states := bufs[2:]
	var buf bytes.Buffer
	if err := o.SaveTo(&buf, states...); err != nil {
		t.Fatal(err)
	}
	saved := buf.Bytes()
	fresh := func() *runtime.Optimizer {
		f, _ := callerBuffers(t, runtime.CPU, theta, 0, 100)
		return f
	}
	flipped := cloneAll(states)
	flipped[1][7] = -flipped[1][7]
	for _, c := range []struct {
		name   string
		states [][]float32
		kind   error
	}{
		{"a flipped bit", flipped, runtime.ErrCheckpointCorrupted},
		{"no states", nil, runtime.ErrCheckpointMismatch},
		{"short states", cloneAll(states)[:1], runtime.ErrCheckpointMismatch},
	} {
		f := fresh()
		if err := f.LoadFrom(bytes.NewReader(saved), c.states...); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
		if f.Steps() != 0 {
			t.Errorf("%s: the refused load changed the step counter", c.name)
		}
	}
	f := fresh()
	if err := f.LoadFrom(bytes.NewReader(saved), states...); err != nil || f.Steps() != 1 {
		t.Errorf("LoadFrom with the states saved: %v (%d steps)", err, f.Steps())
	}
	r, rts := openFiber(t, runtime.Options{}, theta)
	if err := r.SaveTo(&buf, states...); err == nil || !strings.Contains(err.Error(), "keeps its states itself") {
		t.Errorf("SaveTo with states on registered tensors: %v", err)
	}
	_ = rts
}

func cloneAll(s [][]float32) [][]float32 {
	out := make([][]float32, len(s))
	for i, x := range s {
		out[i] = append([]float32(nil), x...)
	}
	return out
}

// TestResumeRecordUnwritable: where the resume cannot be recorded, Load
// refuses, saying where to record it, rather than resume unrecorded.
func TestResumeRecordUnwritable(t *testing.T) {
	path, _ := savedFiber(t, 3)
	notDir := filepath.Join(t.TempDir(), "file")
	writeFile(t, notDir, []byte("a file, not a directory"))
	err := loadFresh(t, runtime.Options{StateDir: notDir}, path)
	if !errors.Is(err, runtime.ErrResumed) || !strings.Contains(err.Error(), "cannot record the resume") || !strings.Contains(err.Error(), "FIBERGEN_STATE_DIR") {
		t.Errorf("Load with the record in a file: %v", err)
	}
	if err := loadFresh(t, runtime.Options{StateDir: t.TempDir()}, path); err != nil {
		t.Errorf("Load with a record of its own: %v", err)
	}
}
