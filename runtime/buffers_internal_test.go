package runtime

import (
	"testing"
	"unsafe"
)

// pageOffset is where b starts in its 4 KiB page.
func pageOffset[T any](b []T) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b))) % 4096
}

// TestNewBufferStaggers checks that the flat buffers of a power-of-two size
// start at distinct offsets in their pages (a dozen of them: every shipped
// optimizer has fewer buffers), each 64-byte aligned where its allocation
// is, and that the copy bench measures against is staggered alike.
func TestNewBufferStaggers(t *testing.T) {
	const n = 1 << 20
	seen := map[uintptr]int{}
	for k := range 12 {
		b := newBuffer[float32](k, n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("buffer %d: len %d cap %d, want %d", k, len(b), cap(b), n)
		}
		off := pageOffset(b)
		if other, ok := seen[off]; ok {
			t.Errorf("buffers %d and %d both start at offset %d of a page", other, k, off)
		}
		if off%64 != 0 {
			t.Errorf("buffer %d starts at offset %d of a page: not 64-byte aligned", k, off)
		}
		seen[off] = k
		for _, x := range b[:1024] {
			if x != 0 {
				t.Fatalf("buffer %d is not zero", k)
			}
		}
	}
	c := NewHostCopy(1<<24, 1)
	if pageOffset(c.src) == pageOffset(c.dst) {
		t.Errorf("the copy's source and destination both start at offset %d of a page", pageOffset(c.src))
	}
}
