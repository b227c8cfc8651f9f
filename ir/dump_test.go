package ir_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	. "github.com/fibergen/fibergen/ir"
)

func TestFormatConst(t *testing.T) {
	tests := []struct {
		c    float64
		typ  Type
		want string
	}{
		{0.1, F64, "0.1"},
		{float64(float32(0.1)), F32, "0.1"},
		{float64(float32(0.1)), F64, "0.10000000149011612"},
		{math.Copysign(0, -1), F32, "-0"},
		{math.NaN(), F64, "nan"},
		{math.Inf(1), F32, "inf"},
		{math.Inf(-1), F64, "-inf"},
		{math.SmallestNonzeroFloat32, F32, "1e-45"},
		{1e300, F64, "1e+300"},
	}
	for _, tt := range tests {
		if got := FormatConst(tt.c, tt.typ); got != tt.want {
			t.Errorf("FormatConst(%v, %s) = %q, want %q", tt.c, tt.typ, got, tt.want)
		}
	}
}

// TestFormatConstRoundTrips checks the promise of FormatConst: the text
// parses back to the same bits in its type.
func TestFormatConstRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 5000 {
		x64 := math.Float64frombits(rng.Uint64())
		x32 := float64(math.Float32frombits(rng.Uint32()))
		for _, c := range []struct {
			x    float64
			typ  Type
			bits int
		}{{x64, F64, 64}, {x32, F32, 32}} {
			if math.IsNaN(c.x) || math.IsInf(c.x, 0) {
				continue
			}
			s := FormatConst(c.x, c.typ)
			back, err := strconv.ParseFloat(s, c.bits)
			if err != nil || math.Float64bits(back) != math.Float64bits(c.x) {
				t.Fatalf("FormatConst(%v, %s) = %q parses back to %v (%v)", c.x, c.typ, s, back, err)
			}
		}
	}
}

func TestDumpOfUnknownOpDoesNotPanic(t *testing.T) {
	b := &Block{Name: "step"}
	b.NewValue(Op(255), Type(9), false)
	if s := b.String(); !strings.Contains(s, "op(255)") || !strings.Contains(s, "type(9)") {
		t.Errorf("dump = %q", s)
	}
}

func TestFuncDumpHeader(t *testing.T) {
	fn := irtest.Lower(t, irtest.Program("hyper lr = 1e-3 in (0, inf)\nhyper wd = -0.5\nobserve two_point(a = lr, lookahead = 1)\nstate m = 0\nstate v = lr", "m = g\nv = g\ntheta = g"))
	want := "optimizer p\nhyper lr = 0.001 in (0, inf)\nhyper wd = -0.5\nstates m v lookahead\nobserve two_point(a, lookahead)\ninit:\n"
	if got := fn.String(); !strings.HasPrefix(got, want) {
		t.Errorf("dump starts\n%s\nwant\n%s", got[:min(len(got), len(want)+40)], want)
	}
}
