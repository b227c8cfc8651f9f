package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/pipeline"
)

// oldOutputs makes out/<name>/ for each name as an earlier build and its
// user left it: the five outputs with old content, fiber.json made private,
// and a user's file and directory.
func oldOutputs(t *testing.T, out string, names ...string) {
	t.Helper()
	for _, name := range names {
		dir := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".go", ".ll", ".ptx", ".json", ".so"} {
			writeFile(t, dir, name+ext, []byte("old "+name+ext+"\n"))
		}
		if err := os.Chmod(filepath.Join(dir, name+".json"), 0o600); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "mine.txt", []byte("a user's file\n"))
		writeFile(t, filepath.Join(dir, "notes"), "n.txt", []byte("a user's note\n"))
	}
}

// failAfter makes the build's n-th file write (from 1) fail as a full disk
// would, until the test ends.
func failAfter(t *testing.T, n int) {
	t.Helper()
	saved := writeUnitFile
	t.Cleanup(func() { writeUnitFile = saved })
	writes := 0
	writeUnitFile = func(d *fileout.Dir, f pipeline.File) error {
		if writes++; writes == n {
			return errors.New("no space left on device")
		}
		return saved(d, f)
	}
}

// TestBuildFailsWhole: a build whose write fails midway — in the first
// unit, or in the second after the first is complete — leaves every old
// output byte for byte as it was and no temporary directory.
func TestBuildFailsWhole(t *testing.T) {
	for _, c := range []struct {
		name string
		fail int
	}{
		{"first unit, third file", 3},
		{"second unit, second file", 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "gen")
			oldOutputs(t, out, "dp_sgd", "fiber")
			before := snapshot(t, out)
			failAfter(t, c.fail)
			r := runMain("build", "-o", out, optPath("dp_sgd"), optPath("fiber"))
			if r.code != 1 || !strings.Contains(r.stderr, "no space left on device") || r.stdout != "" {
				t.Errorf("exit status %d, stdout %q, stderr %q; want 1 and the write's error", r.code, r.stdout, r.stderr)
			}
			checkOneLine(t, r.stderr)
			checkSnapshot(t, out, before)
		})
	}
}

// TestBuildKeepsUsersFiles: a build replaces its outputs and keeps the
// files it does not make, and the mode a user narrowed an output to.
func TestBuildKeepsUsersFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gen")
	oldOutputs(t, out, "dp_sgd")
	mustRun(t, "build", "-o", out, optPath("dp_sgd"))
	dir := filepath.Join(out, "dp_sgd")
	for file, want := range map[string]string{"mine.txt": "a user's file\n", "notes/n.txt": "a user's note\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", file, got, err, want)
		}
	}
	checkBuilt(t, dir, "dp_sgd")
	if fi, err := os.Stat(filepath.Join(dir, "dp_sgd.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("dp_sgd.json: mode %v (%v), want the old file's 0600", fi.Mode().Perm(), err)
	}
	if es, _ := os.ReadDir(out); len(es) != 1 {
		t.Errorf("%s holds %d entries, want dp_sgd alone", out, len(es))
	}
}

// checkBuilt checks that dir holds name's checked-in outputs.
func checkBuilt(t *testing.T, dir, name string) {
	t.Helper()
	for _, ext := range []string{".go", ".ll", ".ptx", ".json"} {
		got, err := os.ReadFile(filepath.Join(dir, name+ext))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("../../generated", name, name+ext))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s%s differs from generated/%s/%s%s", name, ext, name, name, ext)
		}
	}
}

// TestBuildThroughUnitLink: where out/<name> is a symbolic link to a
// directory, the directory it points to is rebuilt and the link stays.
func TestBuildThroughUnitLink(t *testing.T) {
	root := t.TempDir()
	out, real := filepath.Join(root, "gen"), filepath.Join(root, "elsewhere")
	oldOutputs(t, real, "dp_sgd")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../elsewhere/dp_sgd", filepath.Join(out, "dp_sgd")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "build", "-o", out, optPath("dp_sgd"))
	if fi, err := os.Lstat(filepath.Join(out, "dp_sgd")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	checkBuilt(t, filepath.Join(real, "dp_sgd"), "dp_sgd")
	for _, dir := range []string{out, real} {
		if es, _ := os.ReadDir(dir); len(es) != 1 {
			t.Errorf("%s holds %d entries, want dp_sgd alone", dir, len(es))
		}
	}
}

// TestBuildRefusesOutputLink: an output that is a symbolic link is refused
// before anything is written: the build replaces its directory whole and
// cannot write through the link in the same step.
func TestBuildRefusesOutputLink(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gen")
	oldOutputs(t, out, "dp_sgd")
	so := filepath.Join(out, "dp_sgd", "dp_sgd.so")
	os.Remove(so)
	if err := os.Symlink("mine.txt", so); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, out)
	r := runMain("build", "-o", out, optPath("dp_sgd"))
	if want := "dp_sgd.so: it is a symbolic link: build replaces"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit status %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
	checkOneLine(t, r.stderr)
	checkSnapshot(t, out, before)
}
