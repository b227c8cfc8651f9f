package objcache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzVerify: whatever a sums file holds, verify answers without a panic
// and accepts it only if every line names a file under the entry whose
// content has that sum.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("9a271f2a916b0b6ee6cecb2426f0b3206ef074578be55d9bc94f6f3fe3ab86aa  out\n"), []byte("kernel"))
	f.Add([]byte("00  ../out\n"), []byte(""))
	f.Add([]byte("  \n\n  a/b\n"), []byte("x"))
	f.Fuzz(func(t *testing.T, sums, content []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "out"), content, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sumsFile), sums, 0o644); err != nil {
			t.Fatal(err)
		}
		if verify(dir) == nil {
			want, _ := fileSum(filepath.Join(dir, "out"))
			if !allLinesName(string(sums), want) {
				t.Errorf("verify accepted %q for a file of sum %s", sums, want)
			}
		}
	})
}

// allLinesName reports whether every line of sums (as bufio.ScanLines
// reads them: a final newline optional, a carriage return before one
// dropped) gives want as the sum of the one file, out.
func allLinesName(sums, want string) bool {
	for _, line := range strings.Split(strings.TrimSuffix(sums, "\n"), "\n") {
		sum, name, ok := strings.Cut(strings.TrimSuffix(line, "\r"), "  ")
		if !ok || sum != want || filepath.Clean(name) != "out" {
			return false
		}
	}
	return true
}
