package manifest

import (
	"bytes"
	"fmt"
)

// ptxStampPrefix opens the first line of every PTX module fibergen builds;
// the module's ABI stamp (Kernels.ABI) follows it.
const ptxStampPrefix = "// fibergen abi_sha256 "

// StampPTX returns ptx headed by a comment line that carries abi, the ABI
// stamp of the module it was built from, so that a runtime can tell, before
// it loads the PTX, whether it belongs to a manifest: the .ll holds the
// stamp as a global and the .so exports it, but llc drops the global from
// the PTX. PTX assemblers, the CUDA driver and the PTX simulator all take
// the line as a comment.
func StampPTX(abi string, ptx []byte) []byte {
	return append([]byte(ptxStampPrefix+abi+"\n"), ptx...)
}

// PTXStamp returns the ABI stamp on the first line of ptx, and false when
// that line is not a stamp.
func PTXStamp(ptx []byte) (string, bool) {
	line, _, _ := bytes.Cut(ptx, []byte("\n"))
	abi, ok := bytes.CutPrefix(line, []byte(ptxStampPrefix))
	return string(abi), ok
}

// CheckPTX says why ptx, read from where, cannot run the kernels of m: its
// stamp is missing or is not the manifest's abi_sha256. nil when it can.
func (m *Manifest) CheckPTX(ptx []byte, where string) error {
	abi, ok := PTXStamp(ptx)
	switch {
	case !ok:
		return fmt.Errorf("%s has no ABI stamp on its first line (%s…), so nothing says it was built from the %s that the manifest of %s describes: rebuild it with fibergen build",
			where, ptxStampPrefix, m.Kernels.LL, m.Optimizer)
	case abi != m.Kernels.ABI || abi == "":
		return fmt.Errorf("%s was not built from the %s that the manifest of %s describes (ABI stamp %.12q, want %.12q): rebuild it with fibergen build",
			where, m.Kernels.LL, m.Optimizer, abi, m.Kernels.ABI)
	}
	return nil
}
