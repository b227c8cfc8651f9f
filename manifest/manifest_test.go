package manifest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestReadShipped reads every checked-in manifest and decodes its IR.
func TestReadShipped(t *testing.T) {
	paths, _ := filepath.Glob("../generated/*/*.json")
	if len(paths) == 0 {
		t.Fatal("no generated/*/*.json")
	}
	for _, path := range paths {
		m, data, err := manifest.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := m.Func()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(m.Buffers) != 2+len(fn.States) || m.Scalars[len(m.Scalars)-1].Name != "SigmaW" || len(manifest.Hash(data)) != 64 {
			t.Errorf("%s: %d buffers for %d states, last scalar %s", path, len(m.Buffers), len(fn.States), m.Scalars[len(m.Scalars)-1].Name)
		}
		again, err := m.Encode()
		if err != nil || string(again) != string(data) {
			t.Errorf("%s: Encode does not reproduce the file (%v)", path, err)
		}
	}
}

// TestReadErrors covers files that are not current manifests.
func TestReadErrors(t *testing.T) {
	good, err := os.ReadFile("../generated/dp_sgd/dp_sgd.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ name, data, msg string }{
		{"not json", "{", "not a fibergen manifest"},
		{"old format", strings.Replace(string(good), manifest.Format, "fibergen-manifest/0", 1), "rebuild with fibergen build"},
		{"other IR", strings.Replace(string(good), `"name": "dp_sgd"`, `"name": "other"`, 1), "holds the IR of other"},
	} {
		path := filepath.Join(dir, c.name+".json")
		os.WriteFile(path, []byte(c.data), 0o644)
		m, _, err := manifest.Read(path)
		if err == nil {
			_, err = m.Func()
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.msg)
		}
	}
	if _, _, err := manifest.Read(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("reading a missing file succeeded")
	}
}

// TestNewMatchesShipped builds the manifest of every shipped optimizer with
// New, from the code generator's description of its kernels, and compares
// it with the checked-in one field by field.
func TestNewMatchesShipped(t *testing.T) {
	paths, _ := filepath.Glob("../optimizers/*.dsl")
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u, errs, err := pipeline.Compile(path, src)
		if len(errs) > 0 || err != nil {
			t.Fatal(errs, err)
		}
		got, err := manifest.New(u.Func, path, src, u.Module.Kernels)
		if err != nil {
			t.Fatal(err)
		}
		name := u.Func.Name
		want, _, err := manifest.Read(filepath.Join("..", "generated", name, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(manifest.Manifest{}, "IR")); diff != "" {
			t.Errorf("%s: manifest.New differs from generated/%s/%s.json (-shipped +new):\n%s", path, name, name, diff)
		}
		if !sameIR(t, want, got) {
			t.Errorf("%s: manifest.New's IR differs from generated/%s/%s.json's", path, name, name)
		}
	}
}

// sameIR reports whether two manifests hold the same IR (the file holds it
// indented).
func sameIR(t *testing.T, a, b *manifest.Manifest) bool {
	t.Helper()
	fa, err := a.Func()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	return fa.String() == fb.String()
}
