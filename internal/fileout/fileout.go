// Package fileout writes the files fibergen makes — build outputs, .npy
// results, checkpoints — one way: atomically, through a symbolic link to the
// file it names, and never over anything but a regular file. A FIFO, a
// device (as root, /dev/null), a socket or a directory at an output's path
// is refused, and a symbolic link stays a link: its target gets the new
// content.
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
	given := path
	for range maxLinks {
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return path, nil // absent: the write says why it cannot create it, if it cannot
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(path), link)
			}
			path = link
		case !fi.Mode().IsRegular() && path == given:
			return "", fmt.Errorf("it is %s, not a regular file: fibergen replaces only regular files", kind(fi.Mode()))
		case !fi.Mode().IsRegular():
			return "", fmt.Errorf("it links to %s, %s, not a regular file: fibergen replaces only regular files", path, kind(fi.Mode()))
		default:
			return path, nil
		}
	}
	return "", fmt.Errorf("more than %d levels of symbolic links", maxLinks)
}

// kind names a file type that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
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

// Write writes the file at path with mode perm atomically: write fills a
// temporary file in the directory of path's Target, which is synced and
// renamed over the target, and then the directory is synced. On any error
// the target is as it was and no temporary file is left.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	target, err := Target(path)
	if err != nil {
		return err
	}
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
