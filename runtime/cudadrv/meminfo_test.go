package cudadrv

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestBindMemInfoSignature binds cuMemGetInfo_v2's Go type to a dummy
// address, as TestBindSignatures does for the others; nothing is called.
func TestBindMemInfoSignature(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the loader is linux only")
	}
	var dummy byte
	fn := memGetInfo.fn
	if err := bindFunc(&fn, uintptr(unsafe.Pointer(&dummy))); err != nil {
		t.Fatal(err)
	}
	if fn == nil {
		t.Fatal("cuMemGetInfo_v2 left unbound")
	}
}

func TestMemInfo(t *testing.T) {
	ctx := newContext(t)
	free, total, err := ctx.MemInfo()
	if err != nil && strings.Contains(err.Error(), "lacks cuMemGetInfo_v2") {
		// Every real driver has it; testdata/fakecuda does not.
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d bytes free", free, total)
	if total <= 0 || free < 0 || free > total {
		t.Fatalf("MemInfo: free %d, total %d", free, total)
	}
	const size = 64 << 20
	p, err := ctx.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	during, _, err := ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Free(p); err != nil {
		t.Fatal(err)
	}
	if free-during < size {
		t.Errorf("free memory went from %d to %d with %d bytes allocated", free, during, size)
	}
}
