package main

import (
	"regexp"
	"testing"

	"github.com/fibergen/fibergen/internal/version"
)

// TestVersion: fibergen --version and fibergen version print the build
// identity, two lines (the build, then the formats its outputs follow); an
// argument after it is a usage error.
func TestVersion(t *testing.T) {
	want := version.Read().String()
	shape := regexp.MustCompile(`^fibergen github\.com/fibergen/fibergen \S+, revision \S+.*, go1\.\S+ \w+/\w+\nmanifest fibergen-manifest/\d+, noise \S+ \(secure: \S+\), C ABI version \d+\n$`)
	for _, arg := range []string{"--version", "version"} {
		r := runMain(arg)
		if r.code != 0 || r.stderr != "" || r.stdout != want || !shape.MatchString(r.stdout) {
			t.Errorf("fibergen %s: exit %d, stdout %q, stderr %q; want exit 0 and\n%s", arg, r.code, r.stdout, r.stderr, want)
		}
	}
	if r := runMain("version", "--json"); r.code != 2 || r.stdout != "" || r.stderr != "fibergen version: takes no arguments, got [\"--json\"]\n" {
		t.Errorf("fibergen version --json: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
