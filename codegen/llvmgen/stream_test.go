package llvmgen

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/golden"
	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/ir"
)

// TestStreamModuleGolden pins the STREAM kernels' module text for each
// architecture (go test -update rewrites testdata/stream_*.ll).
func TestStreamModuleGolden(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		golden.Check(t, "testdata/stream_"+goarch+".ll", []byte(StreamModule(goarch)))
	}
}

// TestStreamNonTemporal compiles the amd64 module as the toolchain
// compiles a host variant and checks the machine code: every variant's
// copy and triad store with movntps and end with sfence, and nothing is
// fused (the triad's product is rounded before its sum).
func TestStreamNonTemporal(t *testing.T) {
	tc, err := FindToolchain()
	if err != nil {
		t.Skip(err)
	}
	target := hostTargets["amd64"]
	opt, err := tc.optimize(StreamModule("amd64"), strings.Join(entryPoints(StreamModule("amd64"), false), ","), "-mtriple="+target[0], "--data-layout="+target[1])
	if err != nil {
		t.Fatal(err)
	}
	flags := slices.Clone(hostFlags)
	i := slices.Index(flags, "-filetype=obj")
	if i < 0 {
		t.Fatalf("hostFlags %q have no -filetype=obj to swap for -filetype=asm", hostFlags)
	}
	flags[i] = "-filetype=asm"
	out, err := run(tc.LLC, opt, flags...)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range hostisa.For("amd64") {
		for _, sym := range []string{ir.StreamCopySymbol, ir.StreamTriadSymbol} {
			body := funcAsm(string(out), sym+v.Suffix)
			if !regexp.MustCompile(`\tv?movntps\t`).MatchString(body) || !strings.Contains(body, "\tsfence") || strings.Contains(body, "fmadd") {
				t.Errorf("%s%s: want movntps stores, an sfence and no fused multiply-add in:\n%s", sym, v.Suffix, body)
			}
		}
	}
}

// funcAsm is the assembly of the function sym in asm.
func funcAsm(asm, sym string) string {
	start := strings.Index(asm, "\n"+sym+":")
	if start < 0 {
		return ""
	}
	end := strings.Index(asm[start:], ".Lfunc_end")
	if end < 0 {
		return asm[start:]
	}
	return asm[start : start+end]
}
