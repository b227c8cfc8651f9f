package pipeline_test

import (
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/internal/objcache"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/pipeline"
)

// resolveIn points the cache at a fresh directory and works from another
// fresh one, where no optimizer's file is; it skips without LLVM.
func resolveIn(t *testing.T) (cache, wd string) {
	t.Helper()
	if _, err := llvmgen.FindToolchain(); err != nil {
		t.Skip(err)
	}
	cache, wd = filepath.Join(t.TempDir(), "cache"), t.TempDir()
	t.Setenv(objcache.EnvDir, cache)
	t.Chdir(wd)
	return cache, wd
}

// mustResolve is pipeline.Resolve that must succeed.
func mustResolve(t *testing.T, spec string) pipeline.Resolved {
	t.Helper()
	r, err := pipeline.Resolve(spec)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", spec, err)
	}
	return r
}

// TestResolveByName: a shipped optimizer's name compiles once into the
// cache, what fibergen build writes for its file; then it is found there,
// and its directory resolves to itself, relative or not.
func TestResolveByName(t *testing.T) {
	cache, _ := resolveIn(t)
	first := mustResolve(t, "dp_sgd")
	if !first.Built || filepath.Base(first.Dir) != "dp_sgd" || !strings.HasPrefix(first.Dir, cache+string(filepath.Separator)) {
		t.Fatalf("first Resolve: %+v, want a new dp_sgd directory in %s", first, cache)
	}
	if again := mustResolve(t, "dp_sgd"); again != (pipeline.Resolved{Dir: first.Dir}) {
		t.Errorf("second Resolve: %+v, want %s found in the cache", again, first.Dir)
	}
	src, _ := os.ReadFile(filepath.Join(repoRoot(t), "optimizers", "dp_sgd.dsl"))
	u, errs, err := pipeline.Compile("optimizers/dp_sgd.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatal(errs, err)
	}
	files, err := u.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if got, _ := os.ReadFile(filepath.Join(first.Dir, f.Name)); string(got) != string(f.Data) {
			t.Errorf("%s in the cache is not what fibergen build writes (%d bytes, want %d)", f.Name, len(got), len(f.Data))
		}
	}
	t.Chdir(filepath.Dir(first.Dir))
	if r := mustResolve(t, "dp_sgd"); r != (pipeline.Resolved{Dir: first.Dir}) {
		t.Errorf("the directory dp_sgd, relative: %+v, want %s as it is", r, first.Dir)
	}
}

// repoRoot is the repository's root, from the package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// TestResolveFile: a .dsl file of the user's compiles with its warnings,
// printed with their carets; a changed file is another entry.
func TestResolveFile(t *testing.T) {
	resolveIn(t)
	src := "optimizer mine\nhyper lr = 0.1\nhyper b = 2\nstep {\n theta = theta - lr * g\n}\n"
	if err := os.WriteFile("mine.dsl", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustResolve(t, "mine.dsl")
	if !r.Built || filepath.Base(r.Dir) != "mine" || !strings.Contains(r.Warnings, "mine.dsl:3:7: warning: hyper b is never used\n\thyper b = 2\n\t      ^") {
		t.Errorf("Resolve(mine.dsl) = %+v, want a new directory and the warning with its caret", r)
	}
	if err := os.WriteFile("mine.dsl", []byte(strings.Replace(src, "0.1", "0.2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := mustResolve(t, "mine.dsl"); !changed.Built || changed.Dir == r.Dir {
		t.Errorf("the changed file: %+v, want another new entry than %s", changed, r.Dir)
	}
}

func TestResolveErrors(t *testing.T) {
	resolveIn(t)
	if err := os.Mkdir("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("bad.dsl", []byte("optimizer bad\nstep {\n theta = y\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, want string }{
		{"empty", "empty has no empty.json: give a directory fibergen build wrote"},
		{"bad.dsl", "bad.dsl:3:10: undefined: y\n\t theta = y\n\t         ^"},
		{"nosuch", "no file nosuch (relative to "},
		{"nosuch.dsl", "no directory or file nosuch.dsl (relative to "},
		{"", "no optimizer given"},
	} {
		_, err := pipeline.Resolve(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%q): %v, want %q", c.spec, err, c.want)
		}
	}
	var ce *pipeline.CompileError
	if _, err := pipeline.Resolve("bad.dsl"); !errors.As(err, &ce) || len(ce.List) != 1 {
		t.Errorf("Resolve(bad.dsl): %v, want a *CompileError of one diagnostic", err)
	}
}

// TestResolveRebuildsDamaged: a cached optimizer whose host kernel was cut
// short is rebuilt, never returned as it is.
func TestResolveRebuildsDamaged(t *testing.T) {
	resolveIn(t)
	r := mustResolve(t, "dp_sgd")
	so := filepath.Join(r.Dir, "dp_sgd.so")
	whole, err := os.ReadFile(so)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(so, int64(len(whole)/2)); err != nil {
		t.Fatal(err)
	}
	again := mustResolve(t, "dp_sgd")
	if got, _ := os.ReadFile(so); !again.Built || again.Dir != r.Dir || string(got) != string(whole) {
		t.Errorf("after truncating its .so: %+v, %d bytes; want %s rebuilt whole (%d bytes)", again, len(got), r.Dir, len(whole))
	}
}

// TestResolveNameBesideAFolder: a folder of the user's that has a shipped
// optimizer's name, but not what fibergen build writes, does not hide it.
func TestResolveNameBesideAFolder(t *testing.T) {
	resolveIn(t)
	if err := os.Mkdir("dp_sgd", 0o755); err != nil {
		t.Fatal(err)
	}
	if r := mustResolve(t, "dp_sgd"); !r.Built || filepath.Dir(filepath.Dir(r.Dir)) == "." {
		t.Errorf("Resolve(dp_sgd) beside ./dp_sgd: %+v, want the shipped dp_sgd compiled", r)
	}
}

// TestResolveForParams: a name compiled for bfloat16 parameters is a cache
// entry of its own whose manifest stores theta so, and a built directory
// resolves only for the parameters it was built for, the refusal naming
// the command that builds the other.
func TestResolveForParams(t *testing.T) {
	resolveIn(t)
	bf16 := ir.Storage{DType: lang.BFloat16, Stochastic: true}
	f32 := mustResolve(t, "dp_sgd")
	r, err := pipeline.ResolveFor("dp_sgd", bf16)
	if err != nil || !r.Built || r.Dir == f32.Dir {
		t.Fatalf("ResolveFor(dp_sgd, %v) = %+v, %v; want a new entry beside %s", bf16, r, err, f32.Dir)
	}
	m, _, err := manifest.Read(filepath.Join(r.Dir, "dp_sgd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if b := m.Buffers[ir.ThetaBuffer]; b.DType != "bfloat16" || b.Rounding != "stochastic" {
		t.Errorf("theta's manifest entry: %+v, want bfloat16, stochastic", b)
	}
	if again, err := pipeline.ResolveFor(r.Dir, bf16); err != nil || again.Dir != r.Dir {
		t.Errorf("the bf16 directory for bf16 parameters: %+v, %v", again, err)
	}
	_, err = pipeline.ResolveFor(f32.Dir, bf16)
	if want := "was built for parameters stored as f32, not bf16 stochastic: build it with fibergen build --params 'bf16 stochastic'"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the float32 directory for bf16 parameters: %v, want %q", err, want)
	}
	if _, err := pipeline.Resolve(r.Dir); err == nil || !strings.Contains(err.Error(), "stored as bf16 stochastic, not f32") {
		t.Errorf("the bf16 directory for float32 parameters: %v", err)
	}
}
