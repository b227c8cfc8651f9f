package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// f32 returns the float32 with the given bits.
func f32(bits uint32) float32 { return math.Float32frombits(bits) }

var (
	nan    = f32(0x7FC00000) // NumPy's np.nan as float32
	posInf = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
	negZ   = f32(0x80000000)
)

// seq returns n floats start, start+step, ...
func seq(n int, start, step float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = start + float32(i)*step
	}
	return out
}

// le encodes values as little-endian float32 bytes.
func le(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// npyFile assembles a .npy stream from a version, raw header text and data,
// without the padding NumPy adds, to exercise the reader's tolerance.
func npyFile(major byte, dict string, data []byte) []byte {
	b := []byte(magic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(dict)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(dict)))
	}
	b = append(b, dict...)
	return append(b, data...)
}

// v1 builds a format 1.0 file for the given shape text and data.
func v1(shape string, data []byte) []byte {
	return npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': "+shape+", }\n", data)
}

// checkArray fails unless got has the wanted shape and bit-identical data.
func checkArray(t *testing.T, got Array, shape []int, data []float32) {
	t.Helper()
	if !slices.Equal(got.Shape, shape) || got.Shape == nil {
		t.Errorf("shape = %#v, want %#v", got.Shape, shape)
	}
	if len(got.Data) != len(data) || got.Data == nil {
		t.Fatalf("len(Data) = %d (nil: %v), want %d", len(got.Data), got.Data == nil, len(data))
	}
	for i := range data {
		if g, w := math.Float32bits(got.Data[i]), math.Float32bits(data[i]); g != w {
			t.Errorf("Data[%d] bits = %#08x, want %#08x", i, g, w)
		}
	}
}

// fixtures are the float32 files written by testdata/gen.py. golden ones
// are also what Write must reproduce byte for byte.
var fixtures = []struct {
	file   string
	shape  []int
	data   []float32
	golden bool
}{
	{"scalar_f4.npy", []int{}, []float32{1.5}, true},
	{"empty_f4.npy", []int{0}, []float32{}, true},
	{"vec5_f4.npy", []int{5}, []float32{-1, -0.5, 0, 0.5, 1}, true},
	{"mat3x4_f4.npy", []int{3, 4}, seq(12, 0, 0.25), true},
	{"empty2x0_f4.npy", []int{2, 0}, []float32{}, true},
	{"special_f4.npy", []int{6}, []float32{nan, posInf, negInf, negZ, 0, f32(1)}, true},
	{"nanbits_f4.npy", []int{3}, []float32{f32(0x7FC00001), f32(0xFFC00000), f32(0x7F800001)}, true},
	{"v2_f4.npy", []int{2, 3}, seq(6, 0, 1), false},
	{"v3_f4.npy", []int{3}, seq(3, 0, 1), false},
	{"bigendian_f4.npy", []int{3}, []float32{1, -2.5, 3.25}, false},
}

func TestReadFixtures(t *testing.T) {
	for _, tc := range fixtures {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkArray(t, got, tc.shape, tc.data)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err = Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			checkArray(t, got, tc.shape, tc.data)
		})
	}
}

func TestWriteGolden(t *testing.T) {
	for _, tc := range fixtures {
		if !tc.golden {
			continue
		}
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Write(&buf, Array{Shape: tc.shape, Data: tc.data}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("Write output differs from NumPy's:\n got %q\nwant %q", buf.Bytes(), want)
			}
		})
	}
}

func TestWriteHeaderLayout(t *testing.T) {
	for _, shape := range [][]int{nil, {}, {3}, {2, 3}, {123456789012, 0}, {1, 2, 3, 4, 5, 6, 7, 8}, make([]int, 40)} {
		hdr, err := encodeHeader(shape)
		if err != nil {
			t.Fatal(err)
		}
		text := string(hdr[prefixLen1:])
		switch {
		case len(hdr)%headerAlign != 0:
			t.Errorf("shape %v: header is %d bytes, not a multiple of %d", shape, len(hdr), headerAlign)
		case int(binary.LittleEndian.Uint16(hdr[8:])) != len(text):
			t.Errorf("shape %v: length field does not match header", shape)
		case !strings.HasSuffix(text, " \n"):
			t.Errorf("shape %v: header %q does not end in space padding and newline", shape, text)
		case !strings.Contains(text, "'shape': "+FormatShape(shape)+", }"):
			t.Errorf("shape %v: header %q lacks the shape tuple", shape, text)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		shape []int
	}{
		{"scalar", []int{}},
		{"empty", []int{0}},
		{"vector", []int{5}},
		{"matrix", []int{3, 4}},
		{"zero rows", []int{0, 3}},
		{"zero cols", []int{2, 0}},
		{"rank 3", []int{2, 3, 4}},
		{"ones", []int{1, 1, 1, 1}},
		{"multi chunk", []int{3, chunkBytes/4 + 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := numElements(tc.shape)
			checkRoundTrip(t, Array{Shape: tc.shape, Data: seq(n, -3, 0.125)})
		})
	}
}

// checkRoundTrip writes a with Write and WriteFile and reads it back with
// Read and ReadFile.
func checkRoundTrip(t *testing.T, a Array) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checkArray(t, got, a.Shape, a.Data)
	path := filepath.Join(t.TempDir(), "a.npy")
	if err := WriteFile(path, a); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadFile(path); err != nil {
		t.Fatal(err)
	}
	checkArray(t, got, a.Shape, a.Data)
}

func TestSpecialValues(t *testing.T) {
	want := []float32{
		nan, f32(0x7FC00001), f32(0xFFC00000), f32(0x7F800001), f32(0xFFFFFFFF),
		posInf, negInf, negZ, 0, f32(1), math.MaxFloat32, -math.SmallestNonzeroFloat32,
	}
	var buf bytes.Buffer
	if err := Write(&buf, Array{Shape: []int{len(want)}, Data: want}); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checkArray(t, got, []int{len(want)}, want)
}

func TestReadHeaderVariants(t *testing.T) {
	data := le(1, 2, 3, 4, 5, 6)
	tests := []struct {
		name string
		file []byte
	}{
		{"numpy layout", v1("(2, 3)", data)},
		{"key order", npyFile(1, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", data)},
		{"whitespace", npyFile(1, " {\n\t'descr' :'<f4' ,'fortran_order':False,\r\n'shape':( 2 ,3 , ) }  \n\n", data)},
		{"double quotes", npyFile(1, `{"descr": "<f4", "fortran_order": False, "shape": (2, 3)}`, data)},
		{"python2 longs", npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", data)},
		{"duplicate key keeps last", npyFile(1, "{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", data)},
		{"version 2.0", npyFile(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", data)},
		{"version 3.0", npyFile(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", data)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			checkArray(t, got, []int{2, 3}, seq(6, 1, 1))
		})
	}
}

func TestReadBigEndian(t *testing.T) {
	var data []byte
	for _, v := range []float32{1, negZ, nan} {
		data = binary.BigEndian.AppendUint32(data, math.Float32bits(v))
	}
	file := npyFile(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", data)
	got, err := Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	checkArray(t, got, []int{3}, []float32{1, negZ, nan})
}

// readErrorTests are inputs Read must reject, with a substring of the error.
var readErrorTests = []struct {
	name string
	file []byte // or fixture, a file under testdata
	fix  string
	want string
}{
	{name: "empty", file: []byte{}, want: "not a .npy file"},
	{name: "bad magic", file: []byte("PK\x03\x04 this is a zip"), want: "not a .npy file: bad magic"},
	{name: "short non-magic", file: []byte("ab"), want: "not a .npy file"},
	{name: "truncated magic", file: []byte("\x93NUM"), want: "truncated header"},
	{name: "no version", file: []byte(magic), want: "truncated header"},
	{name: "version 4.0", file: npyFile(4, "{}", nil), want: "unsupported .npy format version 4.0"},
	{name: "version 1.1", file: []byte(magic + "\x01\x01\x00\x00"), want: "unsupported .npy format version 1.1"},
	{name: "truncated length", file: []byte(magic + "\x01\x00\x10"), want: "truncated header"},
	{name: "truncated v2 length", file: []byte(magic + "\x02\x00\x10\x00"), want: "truncated header"},
	{name: "truncated dict", file: v1("(3,)", nil)[:30], want: "truncated header"},
	{name: "huge header length", file: []byte(magic + "\x02\x00\xff\xff\xff\xff{"), want: "exceeds"},
	{name: "truncated data", file: v1("(2, 3)", le(1, 2, 3)), want: "truncated data: file holds 12 bytes of data, shape (2, 3) float32 needs 24"},
	{name: "partial element", file: v1("(2,)", []byte{1, 2, 3, 4, 5}), want: "file holds 5 bytes of data, shape (2,) float32 needs 8"},
	{name: "trailing data", file: v1("(2, 3)", le(1, 2, 3, 4, 5, 6, 7)), want: "trailing data: file holds 28 bytes of data, shape (2, 3) float32 needs only 24"},
	{name: "trailing after scalar", file: v1("()", le(1, 2)), want: "trailing data"},
	{name: "trailing after empty", file: v1("(0,)", []byte{0}), want: "trailing data"},
	{name: "float64", fix: "f8.npy", want: "dtype is float64 ('<f8'); need float32 ('<f4'): convert with arr.astype(np.float32)"},
	{name: "int32", fix: "i4.npy", want: "dtype is int32 ('<i4'); need float32 ('<f4')"},
	{name: "float16", file: npyFile(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1,)}", []byte{0, 0}), want: "dtype is float16 ('<f2')"},
	{name: "pipe f4", file: npyFile(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", le(1)), want: "dtype '|f4' is float32 but not little-endian"},
	{name: "unknown dtype", file: npyFile(1, "{'descr': 'zz\t', 'fortran_order': False, 'shape': (1,)}", le(1)), want: `dtype is unknown ("zz\t")`},
	{name: "object", fix: "object.npy", want: "object arrays (dtype '|O') are not supported"},
	{name: "structured", file: npyFile(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", le(1)), want: "structured dtypes are not supported"},
	{name: "fortran", fix: "fortran_f4.npy", want: "Fortran-ordered arrays are not supported; save with np.ascontiguousarray"},
	{name: "not a dict", file: npyFile(1, "[1, 2]", nil), want: "malformed header"},
	{name: "garbage", file: npyFile(1, "hello", nil), want: "malformed header"},
	{name: "missing comma", file: npyFile(1, "{'descr': '<f4' 'fortran_order': False}", nil), want: "malformed header"},
	{name: "unterminated string", file: npyFile(1, "{'descr': '<f4", nil), want: "unterminated string"},
	{name: "unclosed dict", file: npyFile(1, "{'descr': '<f4', ", nil), want: "malformed header"},
	{name: "trailing junk", file: npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", le(1)), want: "after the literal"},
	{name: "non-string key", file: npyFile(1, "{1: 2}", nil), want: "dict key is not a string"},
	{name: "missing key", file: npyFile(1, "{'descr': '<f4', 'shape': (1,)}", le(1)), want: "keys are ['descr', 'shape']"},
	{name: "extra key", file: npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", le(1)), want: "malformed header: keys are"},
	{name: "descr not string", file: npyFile(1, "{'descr': 4, 'fortran_order': False, 'shape': (1,)}", le(1)), want: "descr is 4"},
	{name: "fortran not bool", file: npyFile(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", le(1)), want: "fortran_order is 0"},
	{name: "shape list", file: npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", le(1)), want: "shape is a list"},
	{name: "shape int", file: npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", le(1)), want: "shape is 1, not a tuple"},
	{name: "shape bool", file: v1("(True,)", le(1)), want: "shape dimension 0 is True"},
	{name: "shape string", file: v1("(2, '3')", le(1)), want: "shape dimension 1 is '3'"},
	{name: "shape None", file: v1("None", nil), want: "shape is None"},
	{name: "negative dim", file: v1("(2, -1)", nil), want: "negative dimension -1 in shape (2, -1)"},
	{name: "lone minus", file: v1("(-,)", nil), want: "bad or out-of-range integer"},
	{name: "dim overflows int64", file: v1("(99999999999999999999,)", nil), want: "out-of-range integer"},
	{name: "product overflows", file: v1("(4294967296, 4294967296)", nil), want: "too many elements"},
	{name: "bytes overflow", file: v1("(2305843009213693952,)", nil), want: "too many elements"},
	{name: "huge claim", file: v1("(1000000000000000,)", le(1, 2)), want: "file holds 8 bytes of data, shape (1000000000000000,) float32 needs 4000000000000000"},
	{name: "deep nesting", file: v1(strings.Repeat("(", 10000), nil), want: "nesting deeper than"},
	{name: "unknown name", file: npyFile(1, "{'descr': '<f4', 'fortran_order': false}", nil), want: `unexpected name "false"`},
}

func TestReadErrors(t *testing.T) {
	for _, tc := range readErrorTests {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if tc.fix != "" {
				var err error
				if file, err = os.ReadFile(filepath.Join("testdata", tc.fix)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Read(bytes.NewReader(file))
			checkErr(t, "Read", err, tc.want)
			path := filepath.Join(t.TempDir(), "bad.npy")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = ReadFile(path)
			checkErr(t, "ReadFile", err, tc.want)
			if err != nil && !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("ReadFile error %q does not start with the path", err)
			}
		})
	}
}

// checkErr requires a one-line error containing want.
func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %q", what, want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q, want it to contain %q", what, err, want)
	case strings.Contains(err.Error(), "\n"):
		t.Errorf("%s: error %q spans several lines", what, err)
	}
}

func TestReadHugeClaimAllocatesLittle(t *testing.T) {
	file := v1("(250000000000000,)", le(1, 2, 3))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(file))
	runtime.ReadMemStats(&after)
	checkErr(t, "Read", err, "truncated data")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("Read allocated %d bytes for a %d-byte input", alloc, len(file))
	}
}

func TestReadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.npy")
	_, err := ReadFile(path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile error = %v, want not-exist mentioning %s", err, path)
	}
}

// errReader fails after yielding its prefix.
type errReader struct {
	r   *bytes.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.r.Len() == 0 {
		return 0, e.err
	}
	return e.r.Read(p)
}

func TestReadIOErrors(t *testing.T) {
	boom := errors.New("boom")
	full := v1("(4,)", le(1, 2, 3, 4))
	for _, cut := range []int{0, 3, 9, 20, len(full) - 6, len(full)} {
		_, err := Read(&errReader{bytes.NewReader(full[:cut]), boom})
		if !errors.Is(err, boom) {
			t.Errorf("cut %d: error %v, want wrapped boom", cut, err)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name string
		a    Array
		want string
	}{
		{"too few", Array{Shape: []int{2, 3}, Data: make([]float32, 5)}, "shape (2, 3) holds 6 elements but Data has 5"},
		{"too many", Array{Shape: []int{}, Data: make([]float32, 2)}, "shape () holds 1 elements but Data has 2"},
		{"nil scalar", Array{}, "shape () holds 1 elements but Data has 0"},
		{"negative", Array{Shape: []int{-1}}, "negative dimension -1"},
		{"overflow", Array{Shape: []int{math.MaxInt, 2}}, "too many elements"},
		{"header too long", Array{Shape: make([]int, 30000)}, "too long for .npy format 1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			checkErr(t, "Write", Write(&buf, tc.a), tc.want)
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes before failing", buf.Len())
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "out.npy")
			checkErr(t, "WriteFile", WriteFile(path, tc.a), tc.want)
			checkDirEntries(t, dir)
		})
	}
}

// failWriter accepts limit bytes, then fails.
type failWriter struct{ limit int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		return 0, errors.New("disk full")
	}
	f.limit -= len(p)
	return len(p), nil
}

func TestWriteWriterError(t *testing.T) {
	a := Array{Shape: []int{chunkBytes}, Data: make([]float32, chunkBytes)}
	for _, limit := range []int{0, 128, 128 + chunkBytes} {
		if err := Write(&failWriter{limit}, a); err == nil || err.Error() != "disk full" {
			t.Errorf("limit %d: error %v, want disk full", limit, err)
		}
	}
}

// checkDirEntries fails unless dir holds exactly the named entries.
func checkDirEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.npy")
	a := Array{Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, a); err != nil {
		t.Fatal(err)
	}
	checkDirEntries(t, dir, "out.npy")
	var want bytes.Buffer
	if err := Write(&want, a); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("file holds %q (err %v), want %q", got, err, want.Bytes())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v (err %v), want 0600: a replaced file keeps a narrower mode", st.Mode(), err)
	}
	fresh := filepath.Join(dir, "fresh.npy")
	if err := WriteFile(fresh, a); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode of a new file = %v (err %v), want 0644", st.Mode(), err)
	}
}

func TestWriteFileFailures(t *testing.T) {
	a := Array{Shape: []int{1}, Data: []float32{1}}
	dir := t.TempDir()
	// Failed validation keeps the previous file untouched.
	old := filepath.Join(dir, "old.npy")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkErr(t, "WriteFile", WriteFile(old, Array{Shape: []int{2}}), old+": shape (2,)")
	if b, _ := os.ReadFile(old); string(b) != "old" {
		t.Errorf("old file now holds %q", b)
	}
	// Renaming over a non-empty directory fails and leaves no temp file.
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkErr(t, "WriteFile", WriteFile(sub, a), sub)
	checkDirEntries(t, dir, "old.npy", "sub")
	// A missing directory is reported with the path.
	missing := filepath.Join(dir, "no", "such.npy")
	checkErr(t, "WriteFile", WriteFile(missing, a), missing)
}

func TestWriteFileRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := WriteFile("rel.npy", Array{Shape: []int{1}, Data: []float32{2}}); err != nil {
		t.Fatal(err)
	}
	checkDirEntries(t, dir, "rel.npy")
}

func TestRank(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		want  int
	}{{nil, 0}, {[]int{}, 0}, {[]int{0}, 1}, {[]int{3, 4}, 2}, {[]int{1, 2, 3}, 3}} {
		if got := (Array{Shape: tc.shape}).Rank(); got != tc.want {
			t.Errorf("Rank of shape %v = %d, want %d", tc.shape, got, tc.want)
		}
	}
}

func TestFormatShape(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		want  string
	}{{nil, "()"}, {[]int{3}, "(3,)"}, {[]int{2, 3}, "(2, 3)"}, {[]int{0, 1, 2}, "(0, 1, 2)"}} {
		if got := FormatShape(tc.shape); got != tc.want {
			t.Errorf("FormatShape(%v) = %q, want %q", tc.shape, got, tc.want)
		}
	}
}

// addFuzzSeeds seeds f with the fixtures and the error-case inputs.
func addFuzzSeeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.npy"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, tc := range readErrorTests {
		f.Add(tc.file)
	}
	f.Add(v1("(2, 3)", le(1, 2, 3, 4, 5, 6)))
	f.Add(npyFile(2, "{'shape': (1,), 'descr': '>f4', 'fortran_order': False}", le(1)))
}

// FuzzRead checks that Read never panics and that whatever it accepts
// survives Write and Read bit for bit.
func FuzzRead(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("Write of a parsed array failed: %v", err)
		}
		b, err := Read(&buf)
		if err != nil {
			t.Fatalf("Read of Write output failed: %v", err)
		}
		checkArray(t, b, a.Shape, a.Data)
	})
}
