package llvmgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/objcache"
)

// fakeTools writes shell scripts into a fresh directory, which becomes the
// whole PATH: each prints its text when run with --version.
func fakeTools(t *testing.T, tools map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(objcache.EnvDir, filepath.Join(dir, "cache")) // the fakes' versions, not remembered in the user's cache
	for name, text := range tools {
		script := "#!/bin/sh\necho '" + text + "'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	return dir
}

// TestFindToolchainEmptyPATH runs findToolchain with nothing on PATH: it
// finds LLVM 14 in /usr/lib/llvm-14/bin if installed there (and no linker),
// else fails naming the Debian package to install.
func TestFindToolchainEmptyPATH(t *testing.T) {
	fakeTools(t, nil)
	tc, err := findToolchain()
	if _, statErr := os.Stat("/usr/lib/llvm-14/bin/llc"); statErr == nil {
		if err != nil || tc.LLC != "/usr/lib/llvm-14/bin/llc" || tc.Opt != "/usr/lib/llvm-14/bin/opt" || tc.Linker != "" {
			t.Errorf("findToolchain: %+v, %v; want LLVM 14 from /usr/lib/llvm-14/bin and no linker", tc, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "llvm-14") || !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("findToolchain: %+v, %v; want an error naming the Debian package llvm-14 and apt-get install", tc, err)
	}
}

func TestFindTool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools map[string]string
		want  string // the found tool, or the error's text
		err   bool
	}{
		{"missing", nil, "no fgtool-14 or fgtool on PATH", true},
		{"wrong version", map[string]string{"fgtool": "LLVM version 15.0.7"}, "found only", true},
		{"no version", map[string]string{"fgtool": "hello"}, "no fgtool-14 or fgtool on PATH", true},
		{"suffixed", map[string]string{"fgtool-14": "Ubuntu LLVM version 14.0.6", "fgtool": "LLVM version 15.0.7"}, "fgtool-14", false},
		{"plain", map[string]string{"fgtool-14": "LLVM version 13.0.1", "fgtool": "LLVM version 14.0.0"}, "fgtool", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeTools(t, tc.tools)
			path, _, err := findTool("fgtool")
			if tc.err {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "apt-get install -y llvm-14") {
					t.Errorf("findTool: %q, %v; want an error mentioning %q and llvm-14", path, err, tc.want)
				}
				return
			}
			if err != nil || path != filepath.Join(dir, tc.want) {
				t.Errorf("findTool: %q, %v; want %s", path, err, filepath.Join(dir, tc.want))
			}
		})
	}
}

func TestFindToolRejectsOtherVersion(t *testing.T) {
	dir := fakeTools(t, map[string]string{"fgtool": "LLVM version 15.0.7", "fgtool-14": "LLVM version 16.0.0"})
	_, _, err := findTool("fgtool")
	if err == nil {
		t.Fatal("findTool accepted LLVM 15 and 16")
	}
	for _, want := range []string{"found only", filepath.Join(dir, "fgtool") + " is LLVM 15.0.7", "LLVM 16.0.0", "llvm-14"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestFindToolchainFakeLLC puts a fake llc of LLVM 15 on PATH: found only
// if LLVM 14 is not installed in /usr/lib/llvm-14, where findToolchain looks
// whatever PATH is.
func TestFindToolchainFakeLLC(t *testing.T) {
	fakeTools(t, map[string]string{"llc": "LLVM version 15.0.7", "opt": "LLVM version 15.0.7"})
	tc, err := findToolchain()
	if _, statErr := os.Stat("/usr/lib/llvm-14/bin/llc"); statErr == nil {
		if err != nil || tc.LLC != "/usr/lib/llvm-14/bin/llc" || majorOf(tc.Version) != LLVMMajor {
			t.Errorf("findToolchain: %+v, %v; want /usr/lib/llvm-14/bin/llc", tc, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "LLVM 15.0.7") || !strings.Contains(err.Error(), "found only") {
		t.Errorf("findToolchain: %+v, %v; want LLVM 15.0.7 rejected", tc, err)
	}
}

func TestToolVersion(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"Ubuntu LLVM version 14.0.6\n  Optimized build.", "14.0.6"},
		{"LLVM (http://llvm.org/):\n  LLVM version 15.0.7", "15.0.7"},
		{"LLVM version 14", ""},
	} {
		dir := fakeTools(t, map[string]string{"tool": tc.text})
		got, err := toolVersion(filepath.Join(dir, "tool"))
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("toolVersion of %q: %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	if _, err := toolVersion("/nonexistent/llc"); err == nil || !strings.Contains(err.Error(), "/nonexistent/llc --version") {
		t.Errorf("toolVersion of a missing tool: %v", err)
	}
	for v, want := range map[string]int{"14.0.6": 14, "9.0.1": 9, "": 0} {
		if got := majorOf(v); got != want {
			t.Errorf("majorOf(%q) = %d, want %d", v, got, want)
		}
	}
}
