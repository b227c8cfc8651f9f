package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
	"github.com/google/go-cmp/cmp"
)

// TestFromBuildInfo: the identity reads the module and the VCS stamp from
// the build info, and says when there is no stamp.
func TestFromBuildInfo(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	formats := fmt.Sprintf("manifest %s, noise %s (secure: %s), C ABI version %d\n", manifest.Format, rng.Version, rng.SecureVersion, CABI)
	main := debug.Module{Path: "github.com/fibergen/fibergen", Version: "(devel)"}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"stamped", &debug.BuildInfo{Main: main, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "7430a7b0b331c429a54769d2e9dfb3b61c5245e1"},
			{Key: "vcs.time", Value: "2026-11-26T20:00:00Z"},
			{Key: "vcs.modified", Value: "false"},
		}}, "fibergen github.com/fibergen/fibergen (devel), revision 7430a7b0b331c429a54769d2e9dfb3b61c5245e1 of 2026-11-26T20:00:00Z, " + runtime.Version() + " " + platform + "\n" + formats},
		{"modified", &debug.BuildInfo{Main: main, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "7430a7b"}, {Key: "vcs.modified", Value: "true"},
		}}, "fibergen github.com/fibergen/fibergen (devel), revision 7430a7b, modified, " + runtime.Version() + " " + platform + "\n" + formats},
		{"not stamped", &debug.BuildInfo{Main: main},
			"fibergen github.com/fibergen/fibergen (devel), revision unknown (not stamped: go run, go test, a git worktree or -buildvcs=false), " + runtime.Version() + " " + platform + "\n" + formats},
		{"no build info", nil,
			"fibergen (module unknown), revision unknown (not stamped: go run, go test, a git worktree or -buildvcs=false), " + runtime.Version() + " " + platform + "\n" + formats},
	} {
		if diff := cmp.Diff(c.want, FromBuildInfo(c.bi).String()); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, diff)
		}
	}
}
