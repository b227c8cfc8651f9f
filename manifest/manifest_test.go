package manifest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/manifest"
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
