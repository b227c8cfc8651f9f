package runtime_test

import (
	"math"
	"testing"

	"github.com/fibergen/fibergen/codegen/llvmgen"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime"
)

// TestHostStream: the STREAM kernels compute what they say, bit for bit,
// over lengths that leave a head before the first cache line and a tail
// after the last vector, on one thread and on several.
func TestHostStream(t *testing.T) {
	if _, err := llvmgen.FindToolchain(); err != nil {
		t.Skip(err)
	}
	so, err := pipeline.StreamObject()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bytes   int64
		threads int
	}{{8, 1}, {24 * 1000, 1}, {24 * 12345, 3}, {24 * 70001, 2}} {
		s, err := runtime.NewHostStream(so, c.bytes, c.threads)
		if err != nil {
			t.Fatal(err)
		}
		bufs := runtime.StreamBuffers(s)
		nCopy, nTriad := int(s.CopyBytes()/8), int(s.TriadBytes()/12)
		for i := range bufs[1] { // NewHostStream ran both once: set new sources
			bufs[1][i], bufs[2][i] = float32(i)*0.37+1, float32(i%977)*-1.3
		}
		if err := s.Copy(); err != nil {
			t.Fatal(err)
		}
		for i := range nCopy {
			if math.Float32bits(bufs[0][i]) != math.Float32bits(bufs[1][i]) {
				t.Fatalf("%d bytes, %d threads: copy[%d] = %v, want %v", c.bytes, c.threads, i, bufs[0][i], bufs[1][i])
			}
		}
		if err := s.Triad(); err != nil {
			t.Fatal(err)
		}
		for i := range nTriad {
			if want := bufs[1][i] + float32(3*bufs[2][i]); math.Float32bits(bufs[0][i]) != math.Float32bits(want) {
				t.Fatalf("%d bytes, %d threads: triad[%d] = %v, want %v", c.bytes, c.threads, i, bufs[0][i], want)
			}
		}
		s.Close()
	}
}
