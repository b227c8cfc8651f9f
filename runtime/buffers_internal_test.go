package runtime

import (
	"math"
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

// TestSegmentChunks: the chunks of a segment cover it in order, and every
// cut inside it is a multiple of 8 (no Philox group or secure octet drawn twice).
func TestSegmentChunks(t *testing.T) {
	for _, c := range []struct{ lo, hi, threads int }{{0, 10000, 2}, {3, 10003, 2}, {5, 9, 4}, {7, 20001, 3}, {8, 8, 2}} {
		cs := segmentChunks(c.lo, c.hi, c.threads, goPiece)
		at := c.lo
		for _, ch := range cs {
			if ch[0] != at || ch[1] <= ch[0] || ch[1] != c.hi && ch[1]%8 != 0 {
				t.Fatalf("segmentChunks(%d, %d, %d) = %v", c.lo, c.hi, c.threads, cs)
			}
			at = ch[1]
		}
		if at != c.hi && c.lo != c.hi {
			t.Fatalf("segmentChunks(%d, %d, %d) = %v: stops at %d", c.lo, c.hi, c.threads, cs, at)
		}
	}
}

// TestFirstNonFiniteOddBlocks: -Inf at the first, middle and last position
// of slices of odd and even lengths, aligned and not, around the
// screening's blocks of 1024 — the last float of an odd block included, and
// a block of one float at the end of its allocation, which must not be read
// as a pair (checkptr under -race).
func TestFirstNonFiniteOddBlocks(t *testing.T) {
	for _, start := range []int{0, 1} {
		for _, n := range []int{0, 1, 2, 3, 1024, 1025, 2049, 8193} { // 8193 floats: a large object, its end exact
			g := make([]float32, start+n)[start:] // ending where its allocation ends
			if got := firstNonFinite(g); got != -1 {
				t.Fatalf("start %d, n %d, all finite: %d", start, n, got)
			}
			for _, at := range []int{0, n / 2, n - 1} {
				if at < 0 || at >= n {
					continue
				}
				g[at] = float32(math.Inf(-1))
				if got := firstNonFinite(g); got != at {
					t.Errorf("start %d, n %d: -Inf at %d found at %d", start, n, at, got)
				}
				g[at] = 0
			}
		}
	}
}
