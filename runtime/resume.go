package runtime

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fibergen/fibergen/rng"
)

// A checkpoint is resumed once. Its step counter fixes the noise of the
// steps after it, so two runs resumed from one checkpoint draw the same
// noise on different gradients: two releases the privacy accounting counts
// as one. Load and LoadFrom record each resume in the resume record, a
// directory of this machine's user (Optimizer.ResumeRecordDir), as a file named by
// the checkpoint's identity — the SHA-256 of all its bytes, which hold its
// seed, step, offset, hypers and buffers (or the digest of the trainer's
// states) — created with link(2), which fails where the name exists: of two
// processes resuming one checkpoint at once, exactly one succeeds, and a
// copy, a link or a stream of the same bytes is the same checkpoint
// wherever it lies. Options.AllowResumeAgain is the override, for a trainer
// that knows the earlier resume released nothing (it crashed before its
// first release, say); deleting the record file does the same for one
// checkpoint. What it does not catch is docs/runtime.md's: another machine
// (unless the record directory is shared), another user, and another
// checkpoint of the same seed and step (saved again after a hyper changed).

// ResumeRecordDir is the directory of the optimizer's resume record:
// Options.StateDir/resumed, else $FIBERGEN_STATE_DIR/resumed, else
// $XDG_STATE_HOME/fibergen/resumed, else ~/.local/state/fibergen/resumed.
func (o *Optimizer) ResumeRecordDir() (string, error) {
	if d := cmp.Or(o.opts.StateDir, os.Getenv("FIBERGEN_STATE_DIR")); d != "" {
		return filepath.Join(d, "resumed"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "fibergen", "resumed"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the resume record (%v): set FIBERGEN_STATE_DIR", err)
	}
	return filepath.Join(home, ".local", "state", "fibergen", "resumed"), nil
}

// checkpointID is a checkpoint's identity: the SHA-256 of its bytes.
func checkpointID(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// recordPath is the file that records the resume of the checkpoint data.
func (o *Optimizer) recordPath(data []byte) (string, error) {
	dir, err := o.ResumeRecordDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, checkpointID(data)), nil
}

// resumeRecord returns the file that records the resume of the checkpoint
// data, and what it says where it exists (found).
func (o *Optimizer) resumeRecord(data []byte) (path, note string, found bool, err error) {
	if path, err = o.recordPath(data); err != nil {
		return "", "", false, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, "", false, nil
	}
	return path, strings.TrimSpace(string(b)), err == nil, err
}

// checkResumed returns the *loadError of ErrResumed where the checkpoint
// data, read from name, was resumed before, unless
// Options.AllowResumeAgain.
func (o *Optimizer) checkResumed(name string, data []byte) error {
	if o.opts.AllowResumeAgain {
		return nil
	}
	path, note, found, err := o.resumeRecord(data)
	if err != nil {
		return &loadError{name, ErrResumed, fmt.Sprintf("cannot read the resume record (%v), without which a second resume "+
			"would go unnoticed: %s", err, recordAdvice)}
	}
	if !found {
		return nil
	}
	return &loadError{name, ErrResumed, fmt.Sprintf("this checkpoint was resumed before (%s): %s. If the first resume released "+
		"nothing, delete %s or open with Options.AllowResumeAgain", note, o.againWould(), path)}
}

// againWould says what a second resume of one checkpoint would do: in the
// default mode draw the noise of the steps after it again, on other
// gradients; in secure mode (a load re-keys) release a second run of
// those steps, which the budget counted once.
func (o *Optimizer) againWould() string {
	if o.mode == rng.Secure {
		return "a second resume would release a second run of the steps after it, which the privacy budget counts once"
	}
	return "a second resume would draw the noise of the steps after it again, on other gradients"
}

// recordAdvice says what to do where the resume record cannot be used.
const recordAdvice = "set FIBERGEN_STATE_DIR (Options.StateDir) to a writable directory, or open with " +
	"Options.AllowResumeAgain (allow_resume_again in PyTorch) to resume without a record"

// claimResume records the resume of the checkpoint data, read from name,
// or returns the *loadError of ErrResumed where it was resumed before; the
// function it returns takes the record back, for a load that fails after
// the claim. A record that vanishes between a failed claim and its reading
// (a load that failed and took it back) is claimed again.
func (o *Optimizer) claimResume(name string, data []byte) (undo func(), _ error) {
	if o.opts.AllowResumeAgain {
		return func() {}, nil
	}
	path, err := o.recordPath(data)
	for try := 0; err == nil && try < 3; try++ {
		err = createRecord(path, name)
		switch {
		case err == nil:
			return func() { os.Remove(path) }, nil
		case errors.Is(err, fs.ErrExist):
			if err = o.checkResumed(name, data); err != nil {
				return nil, err
			}
		}
	}
	if err == nil {
		err = errors.New("its record appeared and vanished three times")
	}
	return nil, &loadError{name, ErrResumed, fmt.Sprintf("cannot record the resume (%v), without which a second resume "+
		"would go unnoticed: %s", err, recordAdvice)}
}

// createRecord creates the record file path, saying when, where and by
// which process the checkpoint read from name was resumed: written to a
// temporary file and linked to path, which fails with fs.ErrExist where
// path exists, so that the record appears whole or not at all; on a file
// system without hard links, created with O_EXCL, which fails alike, and
// then written.
func createRecord(path, name string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	host, _ := os.Hostname()
	note := fmt.Sprintf("resumed from %s on %s at %s by process %d\n", name, host, time.Now().UTC().Format(time.RFC3339), os.Getpid())
	f, err := os.CreateTemp(dir, ".record-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(note)
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Link(f.Name(), path); err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	g, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = g.WriteString(note)
	return errors.Join(err, g.Close())
}
