package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/internal/fileout"
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

// WriteFile writes a to path atomically (package fileout: through a
// temporary file in the same directory, synced and renamed over the file
// path names, through a symbolic link to its target; only a regular file is
// replaced). On any error the file at path is as it was. The file gets mode
// 0644.
func WriteFile(path string, a Array) error {
	if err := a.validate(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fileout.Write(path, 0o644, func(w io.Writer) error { return Write(w, a) }); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
