package objcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// useCache points the cache at a fresh directory for the test.
func useCache(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "cache")
	t.Setenv(EnvDir, dir)
	return dir
}

// writer builds an entry of one file, "out", holding content, and counts
// its builds.
func writer(content string, builds *atomic.Int32) func(string) error {
	return func(dir string) error {
		builds.Add(1)
		return os.WriteFile(filepath.Join(dir, "out"), []byte(content), 0o644)
	}
}

func TestEntryBuildsOnce(t *testing.T) {
	root := useCache(t)
	var builds atomic.Int32
	for i, wantBuilt := range []bool{true, false, false} {
		dir, built, err := Entry("so", Key("a"), writer("kernel", &builds))
		if err != nil {
			t.Fatal(err)
		}
		if built != wantBuilt || dir != filepath.Join(root, "so", Key("a")) {
			t.Errorf("use %d: %s, built %v; want %s/so/KEY, built %v", i, dir, built, root, wantBuilt)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "so", Key("a"), "out")); string(got) != "kernel" {
		t.Errorf("the entry holds %q, want %q", got, "kernel")
	}
}

// TestEntryRebuildsDamaged: an entry whose file was truncated, changed,
// removed, or whose sums are gone or lie, is rebuilt and never returned
// as it was.
func TestEntryRebuildsDamaged(t *testing.T) {
	damage := map[string]func(dir string) error{
		"truncated":  func(dir string) error { return os.Truncate(filepath.Join(dir, "out"), 3) },
		"changed":    func(dir string) error { return os.WriteFile(filepath.Join(dir, "out"), []byte("kernex"), 0o644) },
		"removed":    func(dir string) error { return os.Remove(filepath.Join(dir, "out")) },
		"no sums":    func(dir string) error { return os.Remove(filepath.Join(dir, sumsFile)) },
		"empty sums": func(dir string) error { return os.WriteFile(filepath.Join(dir, sumsFile), nil, 0o644) },
		"sums escape": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, sumsFile), []byte("00  ../out\n"), 0o644)
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			useCache(t)
			var builds atomic.Int32
			dir, _, err := Entry("so", Key("a"), writer("kernel", &builds))
			if err != nil {
				t.Fatal(err)
			}
			if err := hurt(dir); err != nil {
				t.Fatal(err)
			}
			again, built, err := Entry("so", Key("a"), writer("kernel", &builds))
			if err != nil || !built || again != dir {
				t.Fatalf("after the damage: %s, built %v, %v; want %s rebuilt", again, built, err, dir)
			}
			if err := verify(dir); err != nil {
				t.Errorf("the rebuilt entry: %v", err)
			}
		})
	}
}

// TestEntryRace: processes' worth of goroutines asking for one entry at
// once all get the same whole entry.
func TestEntryRace(t *testing.T) {
	root := useCache(t)
	var builds atomic.Int32
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			dir, _, err := Entry("opt", Key("race"), writer(strings.Repeat("x", 1<<16), &builds))
			if err == nil {
				err = verify(dir)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(root, "opt", ".*"))
	if len(left) != 0 {
		t.Errorf("temporary directories left behind: %v", left)
	}
	t.Logf("%d builds for 16 racing uses", builds.Load())
}

func TestEntryBuildFails(t *testing.T) {
	root := useCache(t)
	fail := errors.New("llc: no such file")
	_, _, err := Entry("ptx", Key("a"), func(string) error { return fail })
	if !errors.Is(err, fail) {
		t.Fatalf("Entry: %v, want the build's error", err)
	}
	if _, err := os.Stat(filepath.Join(root, "ptx", Key("a"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed build left an entry: %v", err)
	}
	if _, _, err := Entry("ptx", Key("b"), func(string) error { return nil }); err == nil || !strings.Contains(err.Error(), "wrote no files") {
		t.Errorf("a build that writes nothing: %v", err)
	}
}

func TestKeyIsInjective(t *testing.T) {
	keys := map[string][]string{}
	for _, parts := range [][]string{{"ab", "c"}, {"a", "bc"}, {"abc"}, {"abc", ""}, {}, {""}} {
		k := Key(parts...)
		if other, ok := keys[k]; ok {
			t.Errorf("Key(%q) = Key(%q)", parts, other)
		}
		keys[k] = parts
	}
}

func TestDirAndClean(t *testing.T) {
	root := useCache(t)
	if dir, err := Dir(); err != nil || dir != root {
		t.Fatalf("Dir() = %s, %v; want %s ($%s)", dir, err, root, EnvDir)
	}
	var builds atomic.Int32
	if _, _, err := Entry("so", Key("a"), writer("k", &builds)); err != nil {
		t.Fatal(err)
	}
	if err := Clean(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Clean: %v", err)
	}
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "/somewhere")
	if dir, _ := Dir(); dir != "/somewhere/fibergen" {
		t.Errorf("Dir() = %s without $%s, want $XDG_CACHE_HOME/fibergen", dir, EnvDir)
	}
}

// TestEntryUnusableCache: a cache that cannot be made is an error naming
// it and the variable that moves it.
func TestEntryUnusableCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, filepath.Join(file, "cache"))
	var builds atomic.Int32
	_, _, err := Entry("so", Key("a"), writer("k", &builds))
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), EnvDir) {
		t.Errorf("Entry in a cache under a file: %v, want an error naming it and $%s", err, EnvDir)
	}
}

// TestCleanKeepsOthers: a cache directory that holds other things (a
// $FIBERGEN_CACHE set to ~/.cache, say) loses only fibergen's entries.
func TestCleanKeepsOthers(t *testing.T) {
	root := useCache(t)
	var builds atomic.Int32
	if _, _, err := Entry("so", Key("a"), writer("k", &builds)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "pip", "wheel")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Clean(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "so")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Clean left the entries: %v", err)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "keep" {
		t.Errorf("Clean removed another program's file: %q, %v", b, err)
	}
}

// TestDirFromHome: without $FIBERGEN_CACHE and $XDG_CACHE_HOME the cache
// is ~/.cache/fibergen; without $HOME either, an error naming them; the
// variables as SetGetenv gives them.
func TestDirFromHome(t *testing.T) {
	defer SetGetenv(os.Getenv)
	env := map[string]string{"HOME": "/home/u"}
	SetGetenv(func(k string) string { return env[k] })
	if dir, err := Dir(); err != nil || dir != "/home/u/.cache/fibergen" {
		t.Errorf("Dir() = %s, %v; want /home/u/.cache/fibergen", dir, err)
	}
	delete(env, "HOME")
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "$HOME") {
		t.Errorf("Dir() without HOME: %v", err)
	}
}
