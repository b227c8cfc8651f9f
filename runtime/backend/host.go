package backend

import (
	"fmt"
	"unsafe"

	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
)

// Host is one of an optimizer's flat buffers in host memory: its n values
// as float32 (F32), or, for a state stored as a 16-bit type (ir.Storage:
// bfloat16, float16), as their stored bits (U16), which a kernel reads
// through the same pointer. Its value methods widen and narrow, exactly
// for values the type holds.
type Host struct {
	DType lang.DType // lang.Float32 (or ""): F32; else U16
	F32   []float32
	U16   []uint16
}

// Float32s is a float32 buffer over xs.
func Float32s(xs []float32) Host { return Host{DType: lang.Float32, F32: xs} }

// Narrow reports whether h holds 16-bit values.
func (h Host) Narrow() bool { return h.DType.Narrow() }

// Len is the number of values.
func (h Host) Len() int {
	if h.Narrow() {
		return len(h.U16)
	}
	return len(h.F32)
}

// Size is the bytes of one value.
func (h Host) Size() int { return h.DType.Size() }

// Slice is values [lo, hi) of h.
func (h Host) Slice(lo, hi int) Host {
	if h.Narrow() {
		h.U16 = h.U16[lo:hi]
	} else {
		h.F32 = h.F32[lo:hi]
	}
	return h
}

// Pointer is the address of value 0; nil for an empty buffer.
func (h Host) Pointer() unsafe.Pointer {
	switch {
	case h.Len() == 0:
		return nil
	case h.Narrow():
		return unsafe.Pointer(unsafe.SliceData(h.U16))
	}
	return unsafe.Pointer(unsafe.SliceData(h.F32))
}

// Bytes is the memory h spans: Len·Size.
func (h Host) Bytes() int { return h.Len() * h.Size() }

// Values returns values [off, off+n) as float32s (widened: exact).
func (h Host) Values(off, n int) ([]float32, error) {
	if off < 0 || n < 0 || off+n > h.Len() {
		return nil, fmt.Errorf("runtime: read [%d, %d) of a buffer of %d", off, off+n, h.Len())
	}
	out := make([]float32, n)
	if !h.Narrow() {
		copy(out, h.F32[off:])
		return out, nil
	}
	for i, b := range h.U16[off : off+n] {
		out[i] = rng.Widen(h.DType, b)
	}
	return out, nil
}

// SetValues stores src at values [off, off+len(src)): a narrow buffer
// refuses a value its type does not hold (a NaN is stored as the type's
// one NaN), so that what was read back is what is stored, bit for bit.
func (h Host) SetValues(off int, src []float32) error {
	if err := h.CheckValues(off, src); err != nil {
		return err
	}
	h.SetRounded(off, src)
	return nil
}

// CheckValues reports what SetValues would refuse, writing nothing: a range
// past h's end, or a value h's type does not hold.
func (h Host) CheckValues(off int, src []float32) error {
	if off < 0 || off+len(src) > h.Len() {
		return fmt.Errorf("runtime: write [%d, %d) of a buffer of %d", off, off+len(src), h.Len())
	}
	return Holds(h.DType, off, src)
}

// Holds reports the first value of src (value off+i of its buffer) that a
// buffer stored as d does not hold: none for float32, and a NaN is any
// type's NaN.
func Holds(d lang.DType, off int, src []float32) error {
	if d.Narrow() {
		for i, x := range src {
			if w := rng.Widen(d, rng.Bits(d, x)); w != x && x == x {
				return fmt.Errorf("runtime: value %d, %v, is not a %s: a %s state holds only its own values", off+i, x, d.Name(), d.Name())
			}
		}
	}
	return nil
}

// SetRounded writes src at off, each value rounded to nearest where h is
// narrow: as an initial value is rounded, and torch's .to(torch.bfloat16).
func (h Host) SetRounded(off int, src []float32) {
	if !h.Narrow() {
		copy(h.F32[off:], src)
		return
	}
	for i, x := range src {
		h.U16[off+i] = rng.Bits(h.DType, x)
	}
}

// Fill sets every value to v, rounded to nearest where h is narrow (an
// initial value is rounded so, as the kernels' Init rounds it).
func (h Host) Fill(v float32) {
	if !h.Narrow() {
		for i := range h.F32 {
			h.F32[i] = v
		}
		return
	}
	b := rng.Bits(h.DType, v)
	for i := range h.U16 {
		h.U16[i] = b
	}
}

// Copy copies src, of h's storage, into h.
func (h Host) Copy(src Host) {
	copy(h.F32, src.F32)
	copy(h.U16, src.U16)
}

// Widen returns h's values as float32s: a copy for a narrow buffer, h's
// own memory for a float32 one.
func (h Host) Widen() []float32 {
	if !h.Narrow() {
		return h.F32
	}
	out, _ := h.Values(0, h.Len())
	return out
}
