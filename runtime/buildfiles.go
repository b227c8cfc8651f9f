package runtime

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/fibergen/fibergen/manifest"
)

// checkBuild refuses, at Open, kernel files that are not of the build the
// manifest describes — a build killed half way, a file copied from another
// build: every output of one build carries its ABI stamp (docs/kernels.md),
// the PTX on its first line, the shared object as an exported symbol. The
// backends check again what they load; a kernel file that is absent is
// the backend's to report, where it needs one.
func checkBuild(m *manifest.Manifest, files kernelFiles) error {
	if err := checkPTX(m, files); err != nil {
		return err
	}
	if files.so == "" {
		return nil
	}
	abi, err := soStamp(files.so, m.Kernels.ABISymbol)
	if err != nil || abi == m.Kernels.ABI {
		return err
	}
	return fmt.Errorf("runtime: %s was not built from the %s that the manifest of %s describes (ABI stamp %.12q, want %.12q): "+
		"rebuild it with fibergen build", files.so, m.Kernels.LL, m.Optimizer, abi, m.Kernels.ABI)
}

// checkPTX checks the stamp of the PTX given in memory or, where it
// exists, in its file.
func checkPTX(m *manifest.Manifest, files kernelFiles) error {
	ptx, where := files.ptx, "the PTX of "+m.Optimizer
	if ptx == nil && files.ptxPath != "" {
		b, err := os.ReadFile(files.ptxPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("runtime: %w", err)
		}
		ptx, where = b, files.ptxPath
	}
	if ptx == nil {
		return nil
	}
	if err := m.CheckPTX(ptx, where); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	return nil
}

// maxStampLen bounds the bytes read as a stamp: a hex SHA-256 and its NUL.
const maxStampLen = 2*sha256.Size + 1

// soStamp reads the ABI stamp that the shared object at path exports as
// symbol, from its ELF symbol table, without loading it: the manifest's,
// or "" where the file is absent (nil error), not ELF or without the
// symbol.
func soStamp(path, symbol string) (string, error) {
	f, err := elf.Open(path)
	var fe *elf.FormatError
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.As(err, &fe):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("runtime: %w", err)
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Name != symbol || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		b := make([]byte, min(s.Size, maxStampLen))
		if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
			return "", nil
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// readPTX returns the PTX module and where it comes from.
func (f kernelFiles) readPTX(name string) ([]byte, string, error) {
	switch {
	case f.ptx != nil:
		return f.ptx, "the PTX of " + name, nil
	case f.ptxPath == "":
		return nil, "", fmt.Errorf("runtime: the CUDA backend of %s needs its PTX: open the directory fibergen build wrote with Open, or give Compiled.PTX", name)
	}
	ptx, err := os.ReadFile(f.ptxPath)
	if err != nil {
		return nil, "", fmt.Errorf("runtime: the CUDA backend of %s: %w", name, err)
	}
	return ptx, f.ptxPath, nil
}
