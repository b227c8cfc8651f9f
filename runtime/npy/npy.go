package npy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Array is a float32 array in C order.
type Array struct {
	Shape []int
	Data  []float32
}

// Rank returns the number of dimensions of a (0 for a scalar).
func (a Array) Rank() int {
	return len(a.Shape)
}

// maxElements bounds the element count so that the byte size (4 bytes per
// element) fits in an int on every platform.
const maxElements = math.MaxInt / 4

// numElements returns the product of shape, failing on negative dimensions
// or on a product whose byte size would overflow an int.
func numElements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %s", d, FormatShape(shape))
		}
		if d == 0 {
			n = 0
		}
	}
	for _, d := range shape {
		if n == 0 {
			break
		}
		if d > maxElements/n {
			return 0, fmt.Errorf("shape %s has too many elements (size overflows)", FormatShape(shape))
		}
		n *= d
	}
	return n, nil
}

// FormatShape renders shape the way Python's repr renders a tuple:
// "()", "(3,)", "(2, 3)".
func FormatShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
