package fileout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// A Dir replaces a directory whole: its files are written into a new
// directory beside it (".<name>.tmp-*"), which Commit swaps into place in
// one rename, so that a reader sees every old file or every new one, never
// a mix, and a build that fails or is killed before Commit leaves the old
// directory as it was. Abort removes the new directory.
//
// The old directory's entries that are not written again — a user's own
// files — are carried into the new one by Seal, so that none is lost.
type Dir struct {
	target  string      // the directory replaced: the path given, or where its links point
	old     fs.FileInfo // what is at target now; nil: nothing
	tmp     string      // the new directory; "" once committed or aborted
	mode    fs.FileMode // the new directory's mode once sealed
	written map[string]bool
}

// NewDir starts replacing the directory path, or a symbolic link's target
// directory there, making the new directory beside it; the directory that
// holds it must exist. Anything at path but a directory, or a link to one,
// is refused.
func NewDir(path string) (*Dir, error) {
	target, old, err := resolve(path)
	switch {
	case err != nil:
		return nil, err
	case old != nil && !old.IsDir() && target == path:
		return nil, fmt.Errorf("it is %s, not a directory", kind(old.Mode()))
	case old != nil && !old.IsDir():
		return nil, fmt.Errorf("it links to %s, %s, not a directory", target, kind(old.Mode()))
	}
	tmp, err := mkdirTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-")
	if err != nil {
		return nil, RootCause(err)
	}
	d := &Dir{target: target, old: old, tmp: tmp, mode: 0o755, written: map[string]bool{}}
	if old != nil {
		d.mode = old.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	} else if fi, err := os.Stat(tmp); err == nil {
		d.mode = fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky) // 0755 less the umask
	}
	if err := os.Chmod(tmp, 0o700); err != nil { // writable while it is filled
		return nil, errors.Join(RootCause(err), os.Remove(tmp))
	}
	return d, nil
}

// Target is the directory d replaces.
func (d *Dir) Target() string { return d.target }

// mkdirTemp makes a new directory dir/prefix<random> of mode 0755, which
// the umask narrows as it does every new directory's.
func mkdirTemp(dir, prefix string) (string, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		if err := os.Mkdir(name, 0o755); !errors.Is(err, fs.ErrExist) {
			return name, err
		}
	}
	return "", fmt.Errorf("cannot make a directory %s* in %s: every name tried exists", prefix, dir)
}

// WriteFile writes the file name into the new directory and syncs it. Its
// mode is perm, narrowed to the mode of the file of that name in the old
// directory (KeepMode). An entry of that name in the old directory that is
// not a regular file is refused: a directory would be lost, and a symbolic
// link is not written through, since its target is outside the swap.
func (d *Dir) WriteFile(name string, perm fs.FileMode, data []byte) (err error) {
	oldPath := filepath.Join(d.target, name)
	if d.old != nil {
		if fi, err := os.Lstat(oldPath); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is %s: fibergen replaces only regular files in a directory it rebuilds", oldPath, kind(fi.Mode()))
		}
		perm = KeepMode(oldPath, perm)
	}
	f, err := os.OpenFile(filepath.Join(d.tmp, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return RootCause(err)
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := f.Write(data); err != nil {
		return RootCause(err)
	}
	if err := f.Chmod(perm); err != nil {
		return RootCause(err)
	}
	d.written[name] = true
	return RootCause(f.Sync())
}

// Seal brings every entry of the old directory that d did not write into
// the new one — regular files as hard links (copies where the file system
// refuses a link), symbolic links and directories remade as they are —
// gives the new directory the old one's mode (a new one's: 0755 less the
// umask) and syncs it. A FIFO, socket or device is refused: it cannot be
// carried, and the old directory, with it, is about to be removed.
func (d *Dir) Seal() error {
	if d.old != nil {
		entries, err := os.ReadDir(d.target)
		if err != nil {
			return RootCause(err)
		}
		for _, e := range entries {
			if d.written[e.Name()] {
				continue
			}
			if err := carry(filepath.Join(d.target, e.Name()), filepath.Join(d.tmp, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(d.tmp, d.mode); err != nil {
		return RootCause(err)
	}
	return syncDir(d.tmp)
}

// carry remakes the entry from at to.
func carry(from, to string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		link, err := os.Readlink(from)
		if err == nil {
			err = os.Symlink(link, to)
		}
		return err
	case m.IsDir():
		return carryDir(from, to, m)
	case m.IsRegular():
		if os.Link(from, to) == nil {
			return nil
		}
		return copyFile(from, to, m.Perm())
	default:
		return fmt.Errorf("%s is %s, which fibergen cannot carry into the rebuilt directory: move it elsewhere", from, kind(m))
	}
}

// carryDir remakes the directory from, and what it holds, at to.
func carryDir(from, to string, mode fs.FileMode) error {
	if err := os.Mkdir(to, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := carry(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	if err := syncDir(to); err != nil {
		return err
	}
	return os.Chmod(to, mode&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky))
}

// copyFile copies the regular file from to the new file to, with mode perm.
func copyFile(from, to string, perm fs.FileMode) (err error) {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Sync()
}

// Commit puts the new directory in place of the old: both are swapped in
// one rename (renameat2's RENAME_EXCHANGE) and the old one, now at the
// temporary name, is removed. Where the file system cannot exchange, the
// old directory is renamed aside and the new one into its place. With no
// old directory, the new one is renamed into place.
func (d *Dir) Commit() error {
	if d.tmp == "" {
		return errors.New("fileout: the directory was committed or aborted already")
	}
	parent := filepath.Dir(d.target)
	if d.old == nil {
		if err := os.Rename(d.tmp, d.target); err != nil {
			return errors.Join(RootCause(err), d.Abort())
		}
		d.tmp = ""
		return syncDir(parent)
	}
	old, err := d.swap()
	if err != nil {
		return errors.Join(err, d.Abort())
	}
	d.tmp = ""
	if err := syncDir(parent); err != nil {
		return err
	}
	if err := removeAll(old); err != nil {
		return fmt.Errorf("in place, but the old directory, moved to %s, could not be removed: %w", old, RootCause(err))
	}
	return nil
}

// removeAll removes the directory dir and what it holds, making its
// directories writable first: a directory a user made read-only is removed
// too (it was carried into the new directory).
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// swap exchanges the new directory with the old and returns where the old
// one is now.
func (d *Dir) swap() (string, error) {
	err := exchange(d.tmp, d.target)
	if err == nil {
		return d.tmp, nil
	}
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.ENOTSUP) {
		return "", RootCause(err)
	}
	aside := d.tmp + "-old"
	if err := os.Rename(d.target, aside); err != nil {
		return "", RootCause(err)
	}
	if err := os.Rename(d.tmp, d.target); err != nil {
		return "", errors.Join(RootCause(err), os.Rename(aside, d.target))
	}
	return aside, nil
}

// Abort removes the new directory; after Commit it does nothing.
func (d *Dir) Abort() error {
	if d.tmp == "" {
		return nil
	}
	err := removeAll(d.tmp)
	d.tmp = ""
	return err
}
