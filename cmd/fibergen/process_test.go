package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// buildBinary builds the fibergen command, once per test run (TestMain
// removes it), and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("building the binary takes seconds; in-process tests cover the same cases")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	builtBinary.once.Do(func() { builtBinary.path, builtBinary.err = goBuild(goTool) })
	if builtBinary.err != nil {
		t.Fatal(builtBinary.err)
	}
	return builtBinary.path
}

// builtBinary is the command buildBinary built, in a directory of its own.
var builtBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// goBuild builds the command into a new temporary directory.
func goBuild(goTool string) (string, error) {
	dir, err := os.MkdirTemp("", "fibergen-test-bin-")
	if err != nil {
		return "", err
	}
	builtBinary.dir = dir
	bin := filepath.Join(dir, "fibergen")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// runBinary runs the binary and returns its exit status and output.
func runBinary(t *testing.T, bin string, args ...string) result {
	t.Helper()
	return runBinaryEnv(t, bin, nil, args...)
}

// runBinaryEnv is runBinary with the variables env ("NAME=value") added
// to the environment.
func runBinaryEnv(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v", bin, err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// TestProcess runs the real command: its exit status is what Main returns,
// bad input never panics, and a good run writes its output.
func TestProcess(t *testing.T) {
	bin := buildBinary(t)
	dir := fixtureFiles(t)
	out := filepath.Join(dir, "out")
	for _, c := range badCases {
		if c.skipRoot && os.Geteuid() == 0 {
			continue
		}
		before := snapshot(t, dir)
		r := runBinary(t, bin, expandArgs(c.args, dir, out)...)
		stdoutOK := c.stdout == "" && r.stdout == "" || c.stdout != "" && regexp.MustCompile(c.stdout).MatchString(r.stdout)
		if r.code != c.code || !stdoutOK || !regexp.MustCompile(c.msg).MatchString(r.stderr) {
			t.Errorf("%s: exit status %d (want %d), stdout %q, stderr %q (want %q)", c.name, r.code, c.code, r.stdout, r.stderr, c.msg)
		}
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%s: panicked:\n%s", c.name, r.stderr)
		}
		checkSnapshot(t, dir, before)
	}
	r := runBinary(t, bin, expandArgs(runLine+" --set lr=0.5", dir, out)...)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("good run: exit status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	theta, grads := readNPY(t, filepath.Join(dir, "theta.npy")), readNPY(t, filepath.Join(dir, "grads.npy"))
	want := slices.Clone(theta.Data)
	for s := range fixT {
		want = sgdSteps(want, grads.Data[s*fixN:(s+1)*fixN], 0.5, 1)
	}
	if got := readNPY(t, out); !slices.Equal(got.Data, want) {
		t.Errorf("good run wrote %v, want %v", got.Data, want)
	}
}

// TestProcessClosedStdout: `fibergen run --diagnostics | head -1` — a
// reader that closes the pipe early — neither kills the run (SIGPIPE) nor
// loses its output file.
func TestProcessClosedStdout(t *testing.T) {
	bin := buildBinary(t)
	dir := fixtureFiles(t)
	out := filepath.Join(dir, "out")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, expandArgs("run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --sigma-w2 0.01 --seed 1 --diagnostics", dir, out)...)
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run with a closed stdout: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "the standard output was closed at step 0: no more --diagnostics lines; the run goes on") {
		t.Errorf("stderr: %q", stderr.String())
	}
	if got := readNPY(t, out); len(got.Data) != fixN {
		t.Errorf("--out holds %d values, want %d", len(got.Data), fixN)
	}
}
