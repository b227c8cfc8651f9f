// Package objcache is fibergen's per-user cache of what LLVM compiles and
// of optimizers compiled by name: content-addressed entries, each a
// directory named by a hash of everything that made it. An entry is built
// in a fresh directory beside it, its files' SHA-256 sums written last,
// and renamed into place whole; every use checks the sums first. So two
// processes racing on one entry both get a whole one, and a crash mid-write,
// a truncated or a corrupted file means a rebuild, never a wrong load.
//
// The cache lives in $FIBERGEN_CACHE, else $XDG_CACHE_HOME/fibergen
// (~/.cache/fibergen); Clean empties it (fibergen cache clean).
package objcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// EnvDir names the variable that moves the cache.
const EnvDir = "FIBERGEN_CACHE"

// Dir is the cache's directory (which need not exist yet): $FIBERGEN_CACHE,
// else fibergen in the user's cache directory ($XDG_CACHE_HOME, else
// $HOME/.cache), the variables as Getenv gives them (SetGetenv).
func Dir() (string, error) {
	getenv := *lookup.Load()
	if dir := getenv(EnvDir); dir != "" {
		return filepath.Abs(dir)
	}
	base := getenv("XDG_CACHE_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			return "", fmt.Errorf("no cache directory: neither $%s, $XDG_CACHE_HOME nor $HOME is set", EnvDir)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "fibergen"), nil
}

// lookup reads the variables that place the cache: os.Getenv, or the
// caller's view of its environment (SetGetenv).
var lookup atomic.Pointer[func(string) string]

func init() {
	getenv := os.Getenv
	lookup.Store(&getenv)
}

// SetGetenv makes Dir read the variables through getenv: a C library's
// Go runtime copied the environment when it was loaded, and its caller
// (Python) may have changed its own since; setting the process's
// environment from a library would race with the caller's threads.
func SetGetenv(getenv func(string) string) { lookup.Store(&getenv) }

// Key names an entry by parts: the hex SHA-256 of each part's length and
// bytes in order, so that no two lists of parts share a key.
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(p))))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Entry returns the directory of the entry key among kind's ("ptx", "so",
// "opt"), with its files checked against their sums. Where it is absent or
// damaged, build writes the files into the empty directory it is given,
// which becomes the entry; built says so.
func Entry(kind, key string, build func(dir string) error) (dir string, built bool, err error) {
	root, err := Dir()
	if err != nil {
		return "", false, err
	}
	dir = filepath.Join(root, kind, key)
	switch err := verify(dir); {
	case err == nil:
		return dir, false, nil
	case !errors.Is(err, os.ErrNotExist):
		discard(dir) // damaged: rebuilt below
	}
	var buildErr error
	err = create(dir, func(tmp string) error { buildErr = build(tmp); return buildErr })
	switch {
	case buildErr != nil:
		return "", false, buildErr // the build's own, as it said it
	case err != nil:
		return "", false, fmt.Errorf("the fibergen cache %s (%s moves it): %w", root, EnvDir, err)
	}
	return dir, true, nil
}

// Kinds are the entries' kinds: the subdirectories of the cache that
// fibergen writes, and so the only ones Clean removes.
var Kinds = []string{"ptx", "so", "opt", "tools"}

// Clean removes every entry of the cache, and the cache's directory if
// nothing else is left in it: never a file fibergen did not write, so a
// $FIBERGEN_CACHE that names a directory of other things loses none of them.
func Clean() error {
	root, err := Dir()
	if err != nil {
		return err
	}
	for _, kind := range Kinds {
		if err := os.RemoveAll(filepath.Join(root, kind)); err != nil {
			return err
		}
	}
	if err := os.Remove(root); err != nil && !errors.Is(err, os.ErrNotExist) && !isNotEmpty(err) {
		return err
	}
	return nil
}

// isNotEmpty reports whether err says a directory was not empty.
func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}
