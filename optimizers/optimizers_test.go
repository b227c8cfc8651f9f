package optimizers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShippedAreTheFiles: every .dsl file here is shipped by its name,
// with the file's own bytes, and nothing else is.
func TestShippedAreTheFiles(t *testing.T) {
	files, err := filepath.Glob("*.dsl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .dsl files: %v", err)
	}
	var want []string
	for _, f := range files {
		name := strings.TrimSuffix(f, ".dsl")
		want = append(want, name)
		disk, _ := os.ReadFile(f)
		file, src, ok := Source(name)
		if !ok || string(src) != string(disk) || file != "optimizers/"+f {
			t.Errorf("Source(%q) = %q, %d bytes, %v; want optimizers/%s, the file's %d bytes", name, file, len(src), ok, f, len(disk))
		}
	}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestSourceRefuses(t *testing.T) {
	for _, name := range []string{"", "fiber.dsl", "../optimizers/fiber", "./fiber", "/fiber", "fiber/", "nosuch", "FIBER"} {
		if file, _, ok := Source(name); ok {
			t.Errorf("Source(%q) = %s, want no optimizer", name, file)
		}
	}
}
