package hostkernel

import (
	"testing"
	"unsafe"
)

// TestPrivatizeLayout checks privatizeC against struct fibergen_privatize
// on a 64-bit target (docs/kernels.md): five pointers, four int64, the
// double clip, the floats a, b and divisor, the uint32 mode, no padding.
func TestPrivatizeLayout(t *testing.T) {
	var c privatizeC
	got := [...]uintptr{unsafe.Offsetof(c.batch), unsafe.Offsetof(c.clip), unsafe.Offsetof(c.a),
		unsafe.Offsetof(c.divisor), unsafe.Offsetof(c.mode), unsafe.Sizeof(c)}
	if want := [...]uintptr{40, 72, 80, 88, 92, 96}; got != want {
		t.Errorf("offsets of batch, clip, a, divisor, mode and the size: %v, want %v", got, want)
	}
}
