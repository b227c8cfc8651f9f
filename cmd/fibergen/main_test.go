package main

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fibergen/fibergen/runtime/npy"
)

// optDir is the directory of the shipped optimizers, relative to this
// package.
const optDir = "../../optimizers"

// shipped lists the optimizers in optDir.
var shipped = []string{"disk", "dp_adamw", "dp_sgd", "fiber"}

// result is what one in-process run of Main produced.
type result struct {
	code           int
	stdout, stderr string
}

// runMain calls Main with args and captures its output.
func runMain(args ...string) result {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// optPath is the path of a shipped optimizer's .dsl file.
func optPath(name string) string {
	return filepath.Join(optDir, name+".dsl")
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeNPY writes a float32 array to dir/name with runtime/npy (with
// npy.Write, not npy.WriteFile, whose fsync makes tests slow).
func writeNPY(t *testing.T, dir, name string, shape []int, data []float32) string {
	t.Helper()
	var b bytes.Buffer
	if err := npy.Write(&b, npy.Array{Shape: shape, Data: data}); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, b.Bytes())
}

// readNPY reads a float32 .npy file.
func readNPY(t *testing.T, path string) npy.Array {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rawNPY hand-writes a format 1.0 .npy file with the header dict dict
// (without padding) followed by data: what NumPy writes for dtypes and
// layouts that runtime/npy refuses to write.
func rawNPY(dict string, data []byte) []byte {
	const prefix = 10 // magic, version, uint16 header length
	n := len(dict) + 1
	n += (64 - (prefix+n)%64) % 64
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	b.Write(binary.LittleEndian.AppendUint16(nil, uint16(n)))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", n-len(dict)-1))
	b.WriteByte('\n')
	b.Write(data)
	return b.Bytes()
}

// npyDict is a header dict in NumPy's spelling.
func npyDict(descr string, fortran bool, shape string) string {
	f := "False"
	if fortran {
		f = "True"
	}
	return "{'descr': '" + descr + "', 'fortran_order': " + f + ", 'shape': " + shape + ", }"
}

// float64Bytes encodes vals as little-endian float64.
func float64Bytes(vals ...float64) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// int32Bytes encodes vals as little-endian int32.
func int32Bytes(vals ...int32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// float32Bytes encodes vals as little-endian float32.
func float32Bytes(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// entry is what a snapshot records of one file, directory or link.
type entry struct {
	mode fs.FileMode
	data string // a file's content or a link's target
}

// snapshot records every file and directory under root by relative path.
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	snap := map[string]entry{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.data, err = os.Readlink(path)
			if err != nil {
				return err
			}
		case info.Mode()&fs.ModeNamedPipe != 0: // a FIFO is recorded, never read: a read would block
		case !d.IsDir():
			data, err := os.ReadFile(path)
			if err != nil && info.Mode().Perm() != 0 {
				return err
			}
			e.data = string(data)
		}
		snap[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// checkSnapshot reports files that appeared, vanished or changed under
// root since before was taken.
func checkSnapshot(t *testing.T, root string, before map[string]entry) {
	t.Helper()
	after := snapshot(t, root)
	for path, old := range before {
		switch now, ok := after[path]; {
		case !ok:
			t.Errorf("%s was removed", path)
		case now != old:
			t.Errorf("%s was changed", path)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok {
			t.Errorf("%s was created", path)
		}
	}
}

// restoreSnapshot makes root hold exactly what snap recorded.
func restoreSnapshot(t *testing.T, root string, snap map[string]entry) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	paths := make([]string, 0, len(snap))
	for path := range snap {
		paths = append(paths, path)
	}
	slices.Sort(paths) // parents first
	for _, path := range paths {
		e, full := snap[path], filepath.Join(root, path)
		switch {
		case path == ".":
			continue
		case e.mode.IsDir():
			err = os.Mkdir(full, e.mode.Perm())
		case e.mode&fs.ModeSymlink != 0:
			err = os.Symlink(e.data, full)
		case e.mode&fs.ModeNamedPipe != 0:
			err = syscall.Mkfifo(full, uint32(e.mode.Perm()))
		default:
			err = os.WriteFile(full, []byte(e.data), 0o600)
			if err == nil {
				err = os.Chmod(full, e.mode.Perm())
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
