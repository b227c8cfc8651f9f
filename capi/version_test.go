package main

import (
	"testing"

	"github.com/fibergen/fibergen/internal/version"
)

// TestABIVersionIsVersionCABI: the C ABI version that fibergen --version
// prints (version.CABI) is the one this library exports.
func TestABIVersionIsVersionCABI(t *testing.T) {
	if abiVersion != version.CABI {
		t.Errorf("capi's FG_ABI_VERSION is %d, internal/version.CABI %d: change both together", abiVersion, version.CABI)
	}
}
