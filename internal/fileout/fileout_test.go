package fileout

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// entries lists a directory's names, to check no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestWrite: new files, replaced files and files behind symbolic links get
// the content and the mode; the links stay links.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(p("old"), []byte("old"), 0o644)
	os.WriteFile(p("target"), []byte("old"), 0o644)
	os.Symlink("target", p("link"))
	os.Symlink("link", p("chain"))
	os.Symlink("absent", p("dangling"))
	for _, c := range []struct{ name, path, content string }{
		{"a new file", p("new"), "new"},
		{"a regular file", p("old"), "old"},
		{"through a link", p("link"), "target"},
		{"through a chain of links", p("chain"), "target"},
		{"through a dangling link", p("dangling"), "absent"},
	} {
		if err := Write(c.path, 0o640, writeString(c.name)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := os.ReadFile(p(c.content))
		fi, _ := os.Stat(p(c.content))
		if string(got) != c.name || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: %s holds %q, mode %v", c.name, c.content, got, fi.Mode())
		}
	}
	for _, l := range []string{"link", "chain", "dangling"} {
		if fi, err := os.Lstat(p(l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link", l)
		}
	}
	if n := len(entries(t, dir)); n != 7 {
		t.Errorf("%d files in the directory, want 7: %v", n, entries(t, dir))
	}
}

// TestWriteKeepsMode: a replaced file keeps its mode where the one asked
// for is wider, through a link too; a new file gets the mode asked for.
func TestWriteKeepsMode(t *testing.T) {
	for _, c := range []struct {
		name       string
		old        os.FileMode // 0: no old file
		perm, want os.FileMode
		link       bool
	}{
		{"new", 0, 0o644, 0o644, false},
		{"new private", 0, 0o600, 0o600, false},
		{"private kept", 0o600, 0o644, 0o600, false},
		{"private kept through a link", 0o600, 0o644, 0o600, true},
		{"group read kept, write dropped", 0o640, 0o664, 0o640, false},
		{"narrowed by the new mode", 0o644, 0o600, 0o600, false},
		{"never widened", 0o400, 0o644, 0o400, false},
	} {
		dir := t.TempDir()
		file, path := filepath.Join(dir, "f"), filepath.Join(dir, "f")
		if c.old != 0 {
			if err := os.WriteFile(file, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, c.old); err != nil {
				t.Fatal(err)
			}
		}
		if c.link {
			path = filepath.Join(dir, "link")
			os.Symlink("f", path)
		}
		if err := Write(path, c.perm, writeString("new")); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fi, err := os.Stat(file)
		if err != nil || fi.Mode().Perm() != c.want {
			t.Errorf("%s: mode %v (%v), want %v", c.name, fi.Mode().Perm(), err, c.want)
		}
	}
}

// TestWriteRefuses: what is not a regular file is refused and left as it
// was, and so is a file whose content fails to come; no temporary file is
// left.
func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(p("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(p("dir"), 0o755)
	os.Symlink("fifo", p("to-fifo"))
	os.Symlink("loop", p("loop"))
	os.WriteFile(p("keep"), []byte("keep"), 0o644)
	cases := []struct {
		name, path, want string
		write            func(io.Writer) error
	}{
		{"a FIFO", p("fifo"), "a FIFO", writeString("x")},
		{"a link to a FIFO", p("to-fifo"), "a FIFO", writeString("x")},
		{"a directory", p("dir"), "a directory", writeString("x")},
		{"a link loop", p("loop"), "levels of symbolic links", writeString("x")},
		{"a failed write", p("keep"), "disk full", func(io.Writer) error { return errors.New("disk full") }},
		{"a missing directory", p("missing/x"), "no such file", writeString("x")},
	}
	if fi, err := os.Stat("/dev/null"); err == nil && fi.Mode()&os.ModeDevice != 0 {
		cases = append(cases, struct {
			name, path, want string
			write            func(io.Writer) error
		}{"/dev/null", "/dev/null", "a device", writeString("x")})
	}
	for _, c := range cases {
		err := Write(c.path, 0o644, c.write)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if fi, err := os.Lstat(p("fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	if got, _ := os.ReadFile(p("keep")); string(got) != "keep" {
		t.Errorf("a failed write changed the file: %q", got)
	}
	if fi, err := os.Stat("/dev/null"); err == nil && fi.Mode()&os.ModeDevice == 0 {
		t.Error("/dev/null is no longer a device")
	}
	if n := len(entries(t, dir)); n != 5 {
		t.Errorf("files left in the directory: %v", entries(t, dir))
	}
}

// TestSame: one file under two names is the same, two files are not.
func TestSame(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(p("a"), nil, 0o644)
	os.WriteFile(p("b"), nil, 0o644)
	os.Symlink("a", p("to-a"))
	os.Link(p("a"), p("hard-a"))
	t.Chdir(dir)
	for _, c := range []struct {
		x, y string
		want bool
	}{
		{p("a"), p("a"), true},
		{p("a"), "a", true},
		{p("to-a"), p("a"), true},
		{p("hard-a"), p("a"), true},
		{p("new"), "./new", true},
		{p("a"), p("b"), false},
		{p("new"), p("a"), false},
	} {
		if got := Same(c.x, c.y); got != c.want {
			t.Errorf("Same(%s, %s) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}
