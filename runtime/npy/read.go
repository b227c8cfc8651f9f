package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

const (
	magic = "\x93NUMPY"
	// maxHeaderLen bounds the header dict; float32 headers are ~100 bytes.
	maxHeaderLen = 1 << 20
	// chunkBytes is how much data is read and decoded at a time.
	chunkBytes = 1 << 16
)

// Read parses a .npy stream holding a C-ordered float32 array. It reads r
// to the end and fails if bytes follow the array data.
func Read(r io.Reader) (Array, error) {
	return read(r, -1)
}

// ReadFile reads the .npy file at path. Errors mention the path.
func ReadFile(path string) (Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return Array{}, err
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	a, err := read(f, size)
	if err != nil {
		return Array{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// read parses a .npy stream. size is the total stream length when known
// (a regular file), or -1; when known, the data length is checked before
// anything is allocated for it.
func read(r io.Reader, size int64) (Array, error) {
	h, headerLen, err := readHeader(r)
	if err != nil {
		return Array{}, err
	}
	n, err := numElements(h.shape)
	if err != nil {
		return Array{}, err
	}
	avail := int64(-1)
	if size >= 0 {
		avail = size - headerLen
	}
	data, err := readData(r, h, n, avail)
	if err != nil {
		return Array{}, err
	}
	return Array{Shape: h.shape, Data: data}, nil
}

// readHeader reads magic, version, header length and header dict, and
// returns the parsed header and the number of bytes consumed.
func readHeader(r io.Reader) (header, int64, error) {
	major, err := readMagic(r)
	if err != nil {
		return header{}, 0, err
	}
	text, err := readHeaderText(r, major)
	if err != nil {
		return header{}, 0, err
	}
	h, err := parseHeader(text)
	if err != nil {
		return header{}, 0, err
	}
	return h, int64(len(magic) + 2 + lenFieldSize(major) + len(text)), nil
}

// readMagic checks the magic string and returns the major format version.
func readMagic(r io.Reader) (byte, error) {
	var pre [len(magic) + 2]byte
	k, err := io.ReadFull(r, pre[:])
	if err != nil && !isEOF(err) {
		return 0, fmt.Errorf("reading header: %w", err)
	}
	switch m := min(k, len(magic)); {
	case k == 0:
		return 0, errors.New("not a .npy file: it is empty")
	case string(pre[:m]) != magic[:m]:
		return 0, fmt.Errorf("not a .npy file: bad magic %q, want %q", pre[:m], magic)
	case k < len(pre):
		return 0, fmt.Errorf("truncated header: file ends after %d bytes", k)
	}
	major, minor := pre[len(magic)], pre[len(magic)+1]
	if major < 1 || major > 3 || minor != 0 {
		return 0, fmt.Errorf("unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)", major, minor)
	}
	return major, nil
}

// lenFieldSize is the size of the header length field: a uint16 in format
// 1.0, a uint32 in 2.0 and 3.0.
func lenFieldSize(major byte) int {
	if major == 1 {
		return 2
	}
	return 4
}

// readHeaderText reads the header length field and the header dict text.
func readHeaderText(r io.Reader, major byte) ([]byte, error) {
	var field [4]byte
	size := lenFieldSize(major)
	if k, err := io.ReadFull(r, field[:size]); err != nil {
		return nil, headerReadError(err, fmt.Sprintf("header length field is %d of %d bytes", k, size))
	}
	n := int64(binary.LittleEndian.Uint32(field[:]))
	if n > maxHeaderLen {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", n, maxHeaderLen)
	}
	// ReadAll grows with the bytes actually present, not with n.
	text, err := io.ReadAll(io.LimitReader(r, n))
	if err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	if int64(len(text)) < n {
		return nil, fmt.Errorf("truncated header: header is %d bytes but the file has only %d", n, len(text))
	}
	return text, nil
}

// headerReadError reports a short read as a truncated header.
func headerReadError(err error, detail string) error {
	if isEOF(err) {
		return fmt.Errorf("truncated header: %s", detail)
	}
	return fmt.Errorf("reading header: %w", err)
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// readData reads exactly n float32 values and checks that nothing follows.
// avail is the number of data bytes when known, or -1.
func readData(r io.Reader, h header, n int, avail int64) ([]float32, error) {
	need := int64(n) * 4
	if avail >= 0 && avail != need {
		return nil, sizeError(avail, need, h.shape)
	}
	capHint := n
	if avail < 0 {
		capHint = min(n, chunkBytes/4)
	}
	data, got, err := decodeFloats(r, need, capHint, h.order)
	if err != nil {
		return nil, err
	}
	if got < need {
		return nil, sizeError(got, need, h.shape)
	}
	extra, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, fmt.Errorf("reading data: %w", err)
	}
	if extra > 0 {
		return nil, sizeError(need+extra, need, h.shape)
	}
	return data, nil
}

// decodeFloats reads up to need bytes in chunks, decoding as it goes so
// memory grows only with the data actually present. It returns the values
// and the number of bytes read; a short count means the stream ended.
func decodeFloats(r io.Reader, need int64, capHint int, order binary.ByteOrder) ([]float32, int64, error) {
	data := make([]float32, 0, capHint)
	buf := make([]byte, min(need, chunkBytes))
	var got int64
	for got < need {
		k, err := io.ReadFull(r, buf[:min(int64(len(buf)), need-got)])
		for i := 0; i+4 <= k; i += 4 {
			data = append(data, math.Float32frombits(order.Uint32(buf[i:])))
		}
		got += int64(k)
		if isEOF(err) {
			break
		}
		if err != nil {
			return nil, got, fmt.Errorf("reading data: %w", err)
		}
	}
	return data, got, nil
}

// sizeError explains a mismatch between the data present and the shape.
func sizeError(have, need int64, shape []int) error {
	if have < need {
		return fmt.Errorf("truncated data: file holds %d bytes of data, shape %s float32 needs %d",
			have, FormatShape(shape), need)
	}
	return fmt.Errorf("trailing data: file holds %d bytes of data, shape %s float32 needs only %d",
		have, FormatShape(shape), need)
}
