package main

import (
	"fmt"
	"io"

	"github.com/fibergen/fibergen/internal/objcache"
)

// cmdCache prints the directory of the per-user cache of compiled kernels
// and optimizers (package objcache), or empties it.
func cmdCache(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "dir" && args[0] != "clean") {
		return usageError(stderr, "cache", "want dir or clean, got %q", args)
	}
	dir, err := objcache.Dir()
	if err == nil && args[0] == "clean" {
		err = objcache.Clean()
	}
	if err != nil {
		return fail(stderr, "cache", err)
	}
	if args[0] == "clean" {
		fmt.Fprintf(stdout, "removed %s\n", dir)
	} else {
		fmt.Fprintln(stdout, dir)
	}
	return 0
}
