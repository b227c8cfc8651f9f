package main

import (
	"path/filepath"
	"testing"

	"github.com/fibergen/fibergen/internal/golden"
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
		{"explain_coupled_wd0.golden", []string{"explain", "--set", "wd=0", filepath.Join("testdata", "coupled.dsl")}, 0, false},
		{"explain_extremes.golden", []string{"explain", filepath.Join("..", "..", "runtime", "testdata", "extremes.dsl")}, 0, false},
		{"explain_storage.golden", []string{"explain", filepath.Join("..", "..", "runtime", "testdata", "storage.dsl")}, 0, false},
		{"explain_lines.golden", []string{"explain", filepath.Join("..", "..", "dsl", "testdata", "parse", "lines.dsl")}, 0, false},
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
			golden.Check(t, filepath.Join("testdata", c.golden), []byte(got))
		})
	}
}
