// Package fileout writes the files fibergen makes — build outputs, .npy
// results, checkpoints — one way: atomically, through a symbolic link to the
// file it names, never over anything but a regular file, and never more
// readable than the file it replaces. A FIFO, a device (as root, /dev/null),
// a socket or a directory at an output's path is refused, and a symbolic
// link stays a link: its target gets the new content. A Dir replaces a
// whole directory of files at once (fibergen build's output directories).
package fileout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxLinks bounds the symbolic links Target follows, as the kernel does.
const maxLinks = 40

// Target returns the file that writing path writes: path itself, or, where
// path is a symbolic link (or a chain of them), the name it finally points
// at, which need not exist. It is an error when that file exists and is not
// a regular file.
//
// Its errors, as Write's, do not repeat path, which the caller names.
func Target(path string) (string, error) {
	target, fi, err := resolve(path)
	switch {
	case err != nil:
		return "", err
	case fi == nil || fi.Mode().IsRegular():
		return target, nil
	case target == path:
		return "", fmt.Errorf("it is %s, not a regular file: fibergen replaces only regular files", kind(fi.Mode()))
	}
	return "", fmt.Errorf("it links to %s, %s, not a regular file: fibergen replaces only regular files", target, kind(fi.Mode()))
}

// resolve follows the symbolic links at path to the name they finally
// point at and returns it with what is there (nil: nothing).
func resolve(path string) (string, fs.FileInfo, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return path, nil, nil // absent: the write says why it cannot create it, if it cannot
		case err != nil:
			return "", nil, err
		case fi.Mode()&fs.ModeSymlink == 0:
			return path, fi, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", nil, fmt.Errorf("more than %d levels of symbolic links", maxLinks)
}

// kind names a file type.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "special"
}

// Write writes the file at path atomically: write fills a temporary file
// in the directory of path's Target, which is synced and renamed over the
// target, and then the directory is synced. On any error the target is as
// it was and no temporary file is left.
//
// A new file gets mode perm; a file replaced keeps its mode where perm is
// wider (KeepMode): a file made private by its owner stays private.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	target, err := Target(path)
	if err != nil {
		return err
	}
	perm = KeepMode(target, perm)
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return RootCause(err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return RootCause(err)
	}
	return syncDir(filepath.Dir(target))
}

// KeepMode is the mode a file written at path gets: perm, narrowed to the
// permission bits of the regular file path names now, if any, so that a
// write never widens who may read what it replaces.
func KeepMode(path string, perm fs.FileMode) fs.FileMode {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return perm & fi.Mode().Perm()
	}
	return perm
}

// RootCause strips the operation and the path from a file system error,
// for a caller that names the path itself: "open x: no such file or
// directory" becomes "no such file or directory".
func RootCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// syncDir makes a rename in dir durable, where the file system can.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("written, but syncing the directory %s failed: %w", dir, err)
	}
	return nil
}

// Same reports whether writing a would write the file named b (or b's
// target): the same existing file, or the same name once symbolic links
// and relative paths are resolved.
func Same(a, b string) bool {
	ta, errA := Target(a)
	tb, errB := Target(b)
	if errA != nil || errB != nil {
		return false
	}
	fa, errA := os.Stat(ta)
	fb, errB := os.Stat(tb)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	aa, errA := filepath.Abs(ta)
	ab, errB := filepath.Abs(tb)
	return errA == nil && errB == nil && aa == ab
}
