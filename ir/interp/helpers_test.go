package interp_test

import (
	"math"
	"os"
	"testing"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/pipeline"
)

// compile compiles src and prepares it for interpretation.
func compile(t *testing.T, src string) *interp.Program {
	t.Helper()
	u, errs, err := pipeline.Compile("test.dsl", []byte(src))
	if len(errs) > 0 || err != nil {
		t.Fatalf("Compile: %v %v\n%s", errs, err, src)
	}
	fn := u.Func
	p, err := interp.New(fn)
	if err != nil {
		t.Fatalf("interp.New: %v", err)
	}
	return p
}

// program wraps declarations and a step body into a source.
func program(decls, body string) string {
	return "optimizer p\n" + decls + "\nstep {\n" + body + "\n}\n"
}

// zero is a variable, so that invalidNaN is computed when the test runs.
var zero float32

// invalidNaN is the NaN this CPU makes of an invalid operation (x86
// 0xffc00000, arm64 0x7fc00000), as the interpreter computes it: the
// interpreter's NaNs are compared bit for bit (floatbits.Same).
func invalidNaN() float32 { return zero / zero }

// step runs one step of p at step t on copies of theta and g with the
// given states and returns the new theta.
func step(t *testing.T, p *interp.Program, h []float64, theta, g []float32, states [][]float32) []float32 {
	t.Helper()
	th := append([]float32(nil), theta...)
	if err := p.Step(p.HostScalars(h, 0, 0), nil, th, append([]float32(nil), g...), states); err != nil {
		t.Fatalf("Step: %v", err)
	}
	return th
}

// newStates allocates n-long state buffers for p, at zero.
func newStates(p *interp.Program, n int) [][]float32 {
	s := make([][]float32, p.NumStates())
	for i := range s {
		s[i] = make([]float32, n)
	}
	return s
}

func f32bits(b uint32) float32 { return math.Float32frombits(b) }

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
