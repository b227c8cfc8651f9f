package llvmgen

import (
	"fmt"
	goruntime "runtime"

	"github.com/fibergen/fibergen/internal/hostisa"
)

// Recipe says how tc turns a module into PTX (kind "ptx") or into this
// machine's host shared object (kind "so"): the tools' files (toolID) and
// LLVM's version, every flag, the target and the variants compiled. Two
// builds of one module with one recipe give the same kernels, so a cache
// of compiled objects keys them by module and recipe (pipeline).
func (tc *Toolchain) Recipe(kind string) string {
	opt, _ := toolID(tc.Opt)
	llc, _ := toolID(tc.LLC)
	r := fmt.Sprintf("%s LLVM %s opt %s %s llc %s", kind, tc.Version, opt, optPasses, llc)
	if kind == "ptx" {
		return fmt.Sprintf("%s %q", r, ptxFlags)
	}
	linker, _ := toolID(tc.Linker)
	return fmt.Sprintf("%s link %s %q %s/%s %q %+v", r, linker, hostFlags,
		goruntime.GOOS, goruntime.GOARCH, hostTargets[goruntime.GOARCH], hostisa.For(goruntime.GOARCH))
}
