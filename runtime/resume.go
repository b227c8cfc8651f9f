package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// A checkpoint is resumed once. Its step counter fixes the noise of the
// steps after it, so two runs resumed from one checkpoint draw the same
// noise on different gradients: two releases the privacy accounting counts
// as one. Load records each resume beside the checkpoint, in
// <path>.resumed (the checkpoint's SHA-256 and when, where and by which
// process it was resumed), and refuses a checkpoint whose marker names its
// bytes; LoadFrom, which has no file, remembers the checkpoints this
// process resumed. Options.AllowResumeAgain is the override, for a
// trainer that knows the earlier resume released nothing (it crashed
// before its first release, say); deleting the marker does the same for
// one checkpoint file.

// resumeMarker is the file beside a checkpoint that records its resume.
func resumeMarker(path string) string { return path + ".resumed" }

// resumed holds the SHA-256 of every checkpoint LoadFrom resumed in this
// process.
var resumed struct {
	sync.Mutex
	sums map[string]bool
}

// claimFile records the resume of the checkpoint data at path, or returns
// the *loadError of ErrResumed when its marker already names data.
func (o *Optimizer) claimFile(path string, data []byte) error {
	if o.opts.AllowResumeAgain {
		return nil
	}
	sum, marker := checkpointSum(data), resumeMarker(path)
	if prev, err := os.ReadFile(marker); err == nil && strings.HasPrefix(string(prev), sum) {
		return &loadError{path, ErrResumed, fmt.Sprintf("it was resumed before (%s: %s); a second resume would draw the noise of "+
			"the steps after it again, on other gradients. If the first resume released nothing, delete %s or open with "+
			"Options.AllowResumeAgain", marker, strings.TrimSpace(strings.TrimPrefix(string(prev), sum)), marker)}
	}
	host, _ := os.Hostname()
	note := fmt.Sprintf("%s resumed %s on %s by process %d\n", sum, time.Now().UTC().Format(time.RFC3339), host, os.Getpid())
	if err := os.WriteFile(marker, []byte(note), 0o600); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &loadError{path, ErrResumed, fmt.Sprintf("cannot record the resume in %s (%v), without which a second resume "+
			"would go unnoticed; Options.AllowResumeAgain resumes without the record", marker, err)}
	}
	return nil
}

// claimStream records the resume of the checkpoint data read from a
// stream in this process, or returns the *loadError of ErrResumed.
func (o *Optimizer) claimStream(data []byte) error {
	if o.opts.AllowResumeAgain {
		return nil
	}
	sum := checkpointSum(data)
	resumed.Lock()
	defer resumed.Unlock()
	if resumed.sums[sum] {
		return &loadError{streamName, ErrResumed, "this process resumed this checkpoint before; a second resume would draw the noise " +
			"of the steps after it again, on other gradients (Options.AllowResumeAgain if the first released nothing)"}
	}
	if resumed.sums == nil {
		resumed.sums = map[string]bool{}
	}
	resumed.sums[sum] = true
	return nil
}

func checkpointSum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}
