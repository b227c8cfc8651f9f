package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// header is the validated content of a .npy header dict.
type header struct {
	order binary.ByteOrder // byte order of the float32 data
	shape []int
}

// wantDtype is how error messages name the only supported dtype.
const wantDtype = "float32 ('<f4')"

// parseHeader parses and validates the header dict text.
func parseHeader(text []byte) (header, error) {
	v, err := parsePyLiteral(text)
	if err != nil {
		return header{}, fmt.Errorf("malformed header %s: %w", clip(text), err)
	}
	d, ok := v.(pyDict)
	if !ok {
		return header{}, fmt.Errorf("malformed header %s: not a dict", clip(text))
	}
	if err := checkKeys(d); err != nil {
		return header{}, err
	}
	order, err := parseDescr(d["descr"])
	if err != nil {
		return header{}, err
	}
	if err := checkFortranOrder(d["fortran_order"]); err != nil {
		return header{}, err
	}
	shape, err := parseShape(d["shape"])
	if err != nil {
		return header{}, err
	}
	return header{order: order, shape: shape}, nil
}

// checkKeys requires exactly the keys descr, fortran_order and shape, as
// NumPy does.
func checkKeys(d pyDict) error {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "descr,fortran_order,shape" {
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = pyQuote(k)
		}
		return fmt.Errorf("malformed header: keys are [%s]; need 'descr', 'fortran_order' and 'shape'",
			strings.Join(quoted, ", "))
	}
	return nil
}

func checkFortranOrder(v any) error {
	fortran, ok := v.(bool)
	if !ok {
		return fmt.Errorf("malformed header: fortran_order is %s, not True or False", describeValue(v))
	}
	if fortran {
		return fmt.Errorf("Fortran-ordered arrays are not supported; save with np.ascontiguousarray")
	}
	return nil
}

// parseShape converts the shape tuple, rejecting negative or oversized
// dimensions and shapes whose byte size overflows.
func parseShape(v any) ([]int, error) {
	t, ok := v.(pyTuple)
	if !ok {
		return nil, fmt.Errorf("malformed header: shape is %s, not a tuple of integers", describeValue(v))
	}
	shape := make([]int, len(t))
	for i, x := range t {
		d, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("malformed header: shape dimension %d is %s, not an integer", i, describeValue(x))
		}
		if d > math.MaxInt {
			return nil, fmt.Errorf("shape dimension %d is too large", d)
		}
		shape[i] = int(d)
	}
	if _, err := numElements(shape); err != nil {
		return nil, err
	}
	return shape, nil
}

// parseDescr accepts float32 in either byte order and explains anything
// else.
func parseDescr(v any) (binary.ByteOrder, error) {
	descr, ok := v.(string)
	switch {
	case ok && descr == "<f4":
		return binary.LittleEndian, nil
	case ok && descr == ">f4":
		return binary.BigEndian, nil
	case ok && strings.TrimLeft(descr, "<>|=") == "f4":
		return nil, fmt.Errorf("dtype %s is float32 but not little-endian; need %s", pyQuote(descr), wantDtype)
	case ok && strings.TrimLeft(descr, "<>|=") == "O":
		return nil, fmt.Errorf("object arrays (dtype %s) are not supported; need %s", pyQuote(descr), wantDtype)
	case ok:
		return nil, fmt.Errorf("dtype is %s (%s); need %s: convert with arr.astype(np.float32)",
			dtypeName(descr), pyQuote(descr), wantDtype)
	case isList(v):
		return nil, fmt.Errorf("structured dtypes are not supported; need %s", wantDtype)
	}
	return nil, fmt.Errorf("malformed header: descr is %s, not a dtype string", describeValue(v))
}

// dtypeKinds maps NumPy's dtype kind characters to name prefixes.
var dtypeKinds = map[byte]string{
	'f': "float", 'i': "int", 'u': "uint", 'c': "complex", 'b': "bool",
	'O': "object", 'U': "str", 'S': "bytes", 'V': "void",
	'M': "datetime64", 'm': "timedelta64",
}

// dtypeName turns a descr such as '<f8' into a NumPy name such as float64.
func dtypeName(descr string) string {
	s := strings.TrimLeft(descr, "<>|=")
	if s == "" || dtypeKinds[s[0]] == "" {
		return "unknown"
	}
	name := dtypeKinds[s[0]]
	if !strings.ContainsRune("fiuc", rune(s[0])) {
		return name
	}
	size, err := strconv.Atoi(s[1:])
	if err != nil || size <= 0 || size > 64 {
		return name
	}
	return name + strconv.Itoa(8*size)
}

func isList(v any) bool {
	_, ok := v.(pyList)
	return ok
}

// describeValue renders a parsed header value briefly for error messages.
func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return pyQuote(x)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case pyTuple:
		return "a tuple"
	case pyList:
		return "a list"
	case pyDict:
		return "a dict"
	}
	return fmt.Sprintf("%T", v)
}

// pyQuote quotes s in Python style ('<f4') when it is plain printable
// ASCII, and in Go style otherwise so the message stays on one line.
func pyQuote(s string) string {
	const maxLen = 40
	if len(s) > maxLen {
		s = s[:maxLen] + "..."
	}
	q := strconv.QuoteToASCII(s)
	if q == `"`+s+`"` && !strings.ContainsRune(s, '\'') {
		return "'" + s + "'"
	}
	return q
}

// clip quotes the start of a raw header for error messages.
func clip(text []byte) string {
	const maxLen = 80
	s := strings.TrimRight(string(text), " \n")
	if len(s) > maxLen {
		s = s[:maxLen] + "..."
	}
	return strconv.QuoteToASCII(s)
}
