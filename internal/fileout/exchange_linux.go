package fileout

import (
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the directory entries a and b in one step (renameat2 with
// RENAME_EXCHANGE); EINVAL or ENOSYS says the file system or the kernel
// cannot. A variable, so that the tests can take the fallback.
var exchange = func(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}
