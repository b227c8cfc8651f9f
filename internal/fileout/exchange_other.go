//go:build !linux

package fileout

import "syscall"

// exchange cannot swap two directory entries in one step outside Linux:
// Dir.Commit renames the old directory aside instead.
var exchange = func(a, b string) error { return syscall.ENOSYS }
