// Package version is fibergen's build identity, what `fibergen --version`
// prints: the module and the commit it was built from (runtime/debug's
// build info), the Go toolchain, and the formats its outputs follow — the
// manifest format, the noise scheme, and the version of the C ABI that
// libfibergen (capi) built from the same tree exports.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
)

// CABI is the C ABI version of capi (FG_ABI_VERSION, fg_abi_version): a
// second literal of the #define in capi/capi.go's cgo preamble, which this
// package cannot import (capi is a cgo package main). Change both;
// TestABIVersionIsVersionCABI (capi/version_test.go) keeps them equal.
const CABI = 14

// Identity is a build's identity.
type Identity struct {
	Module   string // the main module's path and version: "(devel)" for a build from a checkout
	Revision string // vcs.revision; "" where the build was not stamped
	Time     string // vcs.time, the commit's
	Modified bool   // vcs.modified: the work tree had changes
	Go       string // the toolchain it was built with, go1.x
	Platform string // GOOS/GOARCH it was built for
	Manifest string // manifest.Format
	Noise    string // rng.Version
	Secure   string // rng.SecureVersion
	CABI     int
}

// Read returns this binary's identity.
func Read() Identity {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(bi)
}

// FromBuildInfo returns the identity of a binary with build info bi (nil:
// built without module support).
func FromBuildInfo(bi *debug.BuildInfo) Identity {
	id := Identity{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Manifest: manifest.Format, Noise: rng.Version, Secure: rng.SecureVersion, CABI: CABI}
	if bi == nil {
		return id
	}
	id.Module = strings.TrimSpace(bi.Main.Path + " " + bi.Main.Version)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			id.Revision = s.Value
		case "vcs.time":
			id.Time = s.Value
		case "vcs.modified":
			id.Modified = s.Value == "true"
		}
	}
	return id
}

// String is the identity in two lines: the build, then the formats.
func (id Identity) String() string {
	module := id.Module
	if module == "" {
		module = "(module unknown)"
	}
	rev := "revision unknown (not stamped: go run, go test, a git worktree or -buildvcs=false)"
	if id.Revision != "" {
		rev = "revision " + id.Revision
		if id.Time != "" {
			rev += " of " + id.Time
		}
		if id.Modified {
			rev += ", modified"
		}
	}
	return fmt.Sprintf("fibergen %s, %s, %s %s\nmanifest %s, noise %s (secure: %s), C ABI version %d\n",
		module, rev, id.Go, id.Platform, id.Manifest, id.Noise, id.Secure, id.CABI)
}
