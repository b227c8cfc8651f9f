package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGolden compares whole outputs with testdata/*.golden; refresh them
// with go test -update.
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
		code   int
		stderr bool // compare stderr instead of stdout
	}{
		{"explain_fiber.golden", []string{"explain", optPath("fiber")}, 0, false},
		{"explain_fiber_json_ir.golden", []string{"explain", "--json", "--ir", optPath("fiber")}, 0, false},
		{"explain_doppler.golden", []string{"explain", optPath("doppler")}, 0, false},
		{"check_broken.golden", []string{"check", brokenDSL}, 1, true},
	} {
		t.Run(c.golden, func(t *testing.T) {
			r := runMain(c.args...)
			got, other := r.stdout, r.stderr
			if c.stderr {
				got, other = other, got
			}
			if r.code != c.code || other != "" {
				t.Fatalf("exit status %d (want %d), other output:\n%s", r.code, c.code, other)
			}
			checkGolden(t, filepath.Join("testdata", c.golden), got)
		})
	}
}

// checkGolden compares got with the golden file, or rewrites it under
// -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
