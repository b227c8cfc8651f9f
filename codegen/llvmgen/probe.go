package llvmgen

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/fibergen/fibergen/internal/objcache"
)

// knownVersion is toolVersion, remembered in the user's cache (package
// objcache) for the tool's file as it is now — its path, inode, size and
// time — so that a build whose kernels are all cached starts no process.
// Without a usable cache it probes.
func knownVersion(path string) (string, error) {
	id, ok := toolID(path)
	if !ok {
		return toolVersion(path)
	}
	var version string
	dir, _, err := objcache.Entry("tools", objcache.Key("version", id), func(dir string) error {
		v, err := toolVersion(path)
		version = v
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "version"), []byte(v), 0o644)
	})
	if version != "" {
		return version, nil
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "version"))
	if err != nil || rerr != nil || !versionOnly.Match(b) { // no cache to use, or a failed probe: probe (again)
		return toolVersion(path)
	}
	return string(b), nil
}

// toolID names the file of the tool at path as it is now: its path, inode,
// size and modification time; ok is false if it cannot be read.
func toolID(path string) (id string, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%s %d %d %d", path, ino, fi.Size(), fi.ModTime().UnixNano()), true
}
