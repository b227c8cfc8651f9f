package fileout

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// tree reads every entry under root: its mode and, for a file, its content;
// for a link, where it points.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		v := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(path)
			v += " -> " + link
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(path)
			v += " " + string(data)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oldBuild makes dir/gen as an earlier build and its user left it: two
// outputs (one made private), a user's file, directory and link.
func oldBuild(t *testing.T, dir string) string {
	t.Helper()
	gen := filepath.Join(dir, "gen")
	for _, d := range []string{gen, filepath.Join(gen, "notes")} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{"a.out": 0o644, "b.out": 0o600, "mine.txt": 0o640, "notes/n.txt": 0o644} {
		if err := os.WriteFile(filepath.Join(gen, name), []byte("old "+name), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(gen, name), mode)
	}
	if err := os.Symlink("mine.txt", filepath.Join(gen, "mine.link")); err != nil {
		t.Fatal(err)
	}
	return gen
}

// replaceDir writes a.out, b.out and c.out into a Dir of path, carries
// the rest and commits.
func replaceDir(t *testing.T, path string) {
	t.Helper()
	d, err := NewDir(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.out", "b.out", "c.out"} {
		if err := d.WriteFile(name, 0o644, []byte("new "+name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestDirReplace: the outputs are new, a private one stays private, the
// user's entries are carried (files as the same files), the directory keeps
// its mode and nothing temporary is left — with the exchange and with the
// fallback of two renames.
func TestDirReplace(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		if fallback {
			saved := exchange
			exchange = func(a, b string) error { return &os.LinkError{Op: "exchange", Old: a, New: b, Err: syscall.EINVAL} }
			t.Cleanup(func() { exchange = saved })
		}
		dir := t.TempDir()
		gen := oldBuild(t, dir)
		mine, err := os.Stat(filepath.Join(gen, "mine.txt"))
		if err != nil {
			t.Fatal(err)
		}
		replaceDir(t, gen)
		got := tree(t, gen)
		want := map[string]string{
			".":           "drwxr-x--- ",
			"a.out":       "-rw-r--r-- new a.out",
			"b.out":       "-rw------- new b.out",
			"c.out":       "-rw-r--r-- new c.out",
			"mine.txt":    "-rw-r----- old mine.txt",
			"mine.link":   "Lrwxrwxrwx -> mine.txt",
			"notes":       "drwxr-x--- ",
			"notes/n.txt": "-rw-r--r-- old notes/n.txt",
		}
		got["."] = strings.Fields(got["."])[0] + " "
		got["notes"] = strings.Fields(got["notes"])[0] + " "
		if !maps.Equal(got, want) {
			t.Errorf("fallback %v: the directory holds\n%v\nwant\n%v", fallback, got, want)
		}
		if now, err := os.Stat(filepath.Join(gen, "mine.txt")); err != nil || !os.SameFile(mine, now) {
			t.Errorf("fallback %v: the user's file was copied, not linked (%v)", fallback, err)
		}
		if names := entries(t, dir); !slices.Equal(names, []string{"gen"}) {
			t.Errorf("fallback %v: %s holds %v, want gen alone", fallback, dir, names)
		}
	}
}

// TestDirNew: a directory that does not exist is made.
func TestDirNew(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen")
	replaceDir(t, gen)
	want := map[string]string{".": "drwxr-xr-x", "a.out": "-rw-r--r-- new a.out", "b.out": "-rw-r--r-- new b.out", "c.out": "-rw-r--r-- new c.out"}
	got := tree(t, gen)
	got["."] = strings.TrimSpace(got["."])
	if fi, _ := os.Stat(gen); fi.Mode().Perm() != 0o755 { // a umask may narrow it
		want["."] = fi.Mode().String()
	}
	if !maps.Equal(got, want) {
		t.Errorf("the directory holds %v, want %v", got, want)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"gen"}) {
		t.Errorf("%s holds %v, want gen alone", dir, names)
	}
}

// TestDirThroughLink: a link to a directory stays a link, and the directory
// it points to is replaced.
func TestDirThroughLink(t *testing.T) {
	dir := t.TempDir()
	gen := oldBuild(t, dir)
	link := filepath.Join(dir, "link")
	if err := os.Symlink("gen", link); err != nil {
		t.Fatal(err)
	}
	replaceDir(t, link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the link is no longer a link")
	}
	if got, _ := os.ReadFile(filepath.Join(gen, "a.out")); string(got) != "new a.out" {
		t.Errorf("gen/a.out holds %q", got)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"gen", "link"}) {
		t.Errorf("%s holds %v, want gen and link", dir, names)
	}
}

// TestDirAbort: a replacement abandoned midway, or one that meets what it
// cannot carry, leaves the old directory as it was and nothing temporary.
func TestDirAbort(t *testing.T) {
	for _, c := range []struct {
		name string
		fifo bool // a FIFO among the user's entries
		fail func(d *Dir) error
		want string
	}{
		{"abandoned after one file", false, func(d *Dir) error { return d.WriteFile("a.out", 0o644, []byte("new")) }, ""},
		{"a FIFO to carry", true, (*Dir).Seal, "pipe is a FIFO, which fibergen cannot carry"},
		{"a directory in an output's place", false, func(d *Dir) error { return d.WriteFile("notes", 0o644, []byte("new")) },
			"notes is a directory: fibergen replaces only regular files"},
		{"a link in an output's place", false, func(d *Dir) error { return d.WriteFile("mine.link", 0o644, []byte("new")) },
			"mine.link is a symbolic link: fibergen replaces only regular files"},
	} {
		dir := t.TempDir()
		gen := oldBuild(t, dir)
		if c.fifo {
			if err := syscall.Mkfifo(filepath.Join(gen, "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := tree(t, gen)
		d, err := NewDir(gen)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.fail(d); c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if err := d.Abort(); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, gen); !maps.Equal(got, before) {
			t.Errorf("%s: the old directory changed:\n%v\nwas\n%v", c.name, got, before)
		}
		if names := entries(t, dir); !slices.Equal(names, []string{"gen"}) {
			t.Errorf("%s: %s holds %v, want gen alone", c.name, dir, names)
		}
	}
}

// TestNewDirRefuses: only a directory, or a link to one, is replaced.
func TestNewDirRefuses(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(p("file"), nil, 0o644)
	os.Symlink("file", p("to-file"))
	for _, c := range []struct{ path, want string }{
		{p("file"), "it is a regular file, not a directory"},
		{p("to-file"), "it links to " + p("file") + ", a regular file, not a directory"},
		{p("missing/gen"), "no such file or directory"},
	} {
		if _, err := NewDir(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewDir(%s): %v, want an error saying %q", c.path, err, c.want)
		}
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"file", "to-file"}) {
		t.Errorf("%s holds %v", dir, names)
	}
}

// TestDirReadOnly: a directory its owner made read-only, with a read-only
// directory inside, is replaced, and the new one is read-only as the old
// one was.
func TestDirReadOnly(t *testing.T) {
	dir := t.TempDir()
	gen := oldBuild(t, dir)
	for _, d := range []string{filepath.Join(gen, "notes"), gen} {
		if err := os.Chmod(d, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(gen, 0o700); os.Chmod(filepath.Join(gen, "notes"), 0o700) })
	replaceDir(t, gen)
	got := tree(t, gen)
	if got["."][:10] != "dr-x------" || got["notes"][:10] != "dr-x------" || got["a.out"] != "-rw-r--r-- new a.out" || got["notes/n.txt"] != "-rw-r--r-- old notes/n.txt" {
		t.Errorf("the directory holds %v", got)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"gen"}) {
		t.Errorf("%s holds %v, want gen alone", dir, names)
	}
}
