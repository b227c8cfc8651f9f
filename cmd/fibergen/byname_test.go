package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/objcache"
)

// TestByName: every command that takes a source takes a shipped
// optimizer's name too, from any directory, and does with it what it does
// with the optimizer's file.
func TestByName(t *testing.T) {
	dir := fixtureFiles(t)
	file := optPath("dp_sgd")
	if !filepath.IsAbs(file) {
		abs, err := filepath.Abs(file)
		if err != nil {
			t.Fatal(err)
		}
		file = abs
	}
	t.Setenv(objcache.EnvDir, filepath.Join(t.TempDir(), "cache"))
	t.Chdir(dir)
	for _, args := range [][]string{
		{"check", "%s"},
		{"explain", "%s", "--set", "lr=0.05"},
		{"explain", "%s", "--json"},
		{"run", "%s", "--grads", "grads.npy", "--theta", "theta.npy", "--out", "%o", "--sigma-w2", "0.01", "--seed", "7"},
	} {
		byFile, byName := mustRun(t, with(args, file, "file.npy")...), mustRun(t, with(args, "dp_sgd", "name.npy")...)
		if strings.ReplaceAll(byFile.stdout, file, "optimizers/dp_sgd.dsl") != byName.stdout {
			t.Errorf("fibergen %s: by name:\n%s\nby file:\n%s", strings.Join(args, " "), byName.stdout, byFile.stdout)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "file.npy"))
	b, _ := os.ReadFile(filepath.Join(dir, "name.npy"))
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("run by name wrote %d bytes, by file %d, not the same", len(b), len(a))
	}
	if r := mustRun(t, "build", "-o", "built", "dp_sgd"); r.stdout != "dp_sgd -> "+filepath.Join("built", "dp_sgd")+"\n" {
		t.Errorf("build dp_sgd printed %q", r.stdout)
	}
}

// with is args with %s replaced by src and %o by out.
func with(args []string, src, out string) []string {
	r := strings.NewReplacer("%s", src, "%o", out)
	with := make([]string, len(args))
	for i, a := range args {
		with[i] = r.Replace(a)
	}
	return with
}

func TestByNameErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct{ spec, want string }{
		{"dp_sgdd", "fibergen: no file dp_sgdd (relative to "},
		{"dp_sgdd", "fibergen ships no optimizer of that name (abtrack, "},
		{"dp_sgd.dsl", "fibergen: cannot read dp_sgd.dsl: no such file or directory"},
		{"--json", "fibergen: cannot read --json"},
		{"", "fibergen: no optimizer given"},
	} {
		r := runMain("check", "--", c.spec)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("check %q: exit %d, stderr %q; want one line with %q", c.spec, r.code, r.stderr, c.want)
		}
	}
}

func TestCacheCommand(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv(objcache.EnvDir, cache)
	if r := mustRun(t, "cache", "dir"); r.stdout != cache+"\n" {
		t.Errorf("cache dir printed %q, want %s", r.stdout, cache)
	}
	if err := os.MkdirAll(filepath.Join(cache, "so"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := mustRun(t, "cache", "clean"); r.stdout != "removed "+cache+"\n" {
		t.Errorf("cache clean printed %q", r.stdout)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("cache clean left %s: %v", cache, err)
	}
	for _, args := range [][]string{{"cache"}, {"cache", "purge"}, {"cache", "dir", "x"}} {
		if r := runMain(args...); r.code != 2 || !strings.Contains(r.stderr, "fibergen cache: want dir or clean") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
