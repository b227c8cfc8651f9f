package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// headerAlign is NumPy's ARRAY_ALIGN: magic+version+length+dict is
	// padded to a multiple of it.
	headerAlign = 64
	// growthDigits is NumPy's GROWTH_AXIS_MAX_DIGITS (NumPy >= 1.23): spare
	// spaces left after the dict so the first axis can grow in place.
	growthDigits = 21
	// prefixLen1 is the size of magic, version and the uint16 length field.
	prefixLen1 = len(magic) + 2 + 2
)

// Write writes a as a format 1.0 .npy stream with dtype '<f4' and
// fortran_order False, byte for byte what np.save writes. It fails if
// len(a.Data) does not match the product of a.Shape.
func Write(w io.Writer, a Array) error {
	if err := a.validate(); err != nil {
		return err
	}
	hdr, err := encodeHeader(a.Shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	return writeData(w, a.Data)
}

// validate checks the shape and that Data holds exactly its elements.
func (a Array) validate() error {
	n, err := numElements(a.Shape)
	if err != nil {
		return err
	}
	if n != len(a.Data) {
		return fmt.Errorf("shape %s holds %d elements but Data has %d", FormatShape(a.Shape), n, len(a.Data))
	}
	return nil
}

// encodeHeader builds magic, version 1.0, header length and the padded
// header dict exactly as NumPy's _write_array_header does.
func encodeHeader(shape []int) ([]byte, error) {
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': " + FormatShape(shape) + ", }"
	if len(shape) > 0 {
		dict += strings.Repeat(" ", max(0, growthDigits-len(strconv.Itoa(shape[0]))))
	}
	textLen := len(dict) + 1 // + final newline
	pad := headerAlign - (prefixLen1+textLen)%headerAlign
	if textLen+pad > math.MaxUint16 {
		return nil, fmt.Errorf("header for shape %s is too long for .npy format 1.0", FormatShape(shape))
	}
	var b bytes.Buffer
	b.WriteString(magic)
	b.Write([]byte{1, 0})
	b.Write(binary.LittleEndian.AppendUint16(nil, uint16(textLen+pad)))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// writeData writes data as little-endian float32, a chunk at a time.
func writeData(w io.Writer, data []float32) error {
	buf := make([]byte, 0, min(4*len(data), chunkBytes))
	for i, v := range data {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		if len(buf) == cap(buf) || i == len(data)-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// WriteFile writes a to path atomically: it writes a temporary file in the
// same directory, fsyncs it and renames it over path. On any error nothing
// is left at path (a previous file there is untouched). The file gets mode
// 0644.
func WriteFile(path string, a Array) error {
	if err := a.validate(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := writeTemp(path, a)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeTemp writes a to a new temporary file next to path, fsyncs and
// closes it, and returns its name. On error the temporary file is removed.
func writeTemp(path string, a Array) (name string, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := Write(f, a); err != nil {
		return "", err
	}
	if err := f.Chmod(0o644); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// syncDir fsyncs a directory so a rename in it is durable. It is best
// effort: the file is already in place, so failures are ignored.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
