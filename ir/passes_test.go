package ir_test

import (
	"math"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	. "github.com/fibergen/fibergen/ir"
)

// passCase is a small step block dumped before and after one pass.
type passCase struct {
	name        string
	decls, body string
	prep        func(*Block) // run before the "before" dump, if set
	before      string
	after       string
}

// testPass lowers each case, checks its step block's dump, runs pass on it
// alone and checks the new dump and the invariants.
func testPass(t *testing.T, pass func(*Block), cases []passCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fn := irtest.LowerStep(t, c.decls, c.body)
			if c.prep != nil {
				c.prep(fn.Step)
			}
			if got := fn.Step.String(); !irtest.SameDump(got, c.before) {
				t.Fatalf("before the pass:\n%s\nwant:\n%s", got, c.before)
			}
			pass(fn.Step)
			if got := fn.Step.String(); !irtest.SameDump(got, c.after) {
				t.Errorf("after the pass:\n%s\nwant:\n%s", got, c.after)
			}
			if err := Verify(fn); err != nil {
				t.Errorf("Verify after the pass: %v", err)
			}
		})
	}
}

func TestFoldConstants(t *testing.T) {
	testPass(t, FoldConstants, []passCase{
		{
			name:  "integer arithmetic",
			decls: "",
			body:  "theta = 2 * 3 + g",
			before: `
step:
  u %0:f64 = const 2
  u %1:f64 = const 3
  u %2:f64 = mul %0, %1
  v %3:f32 = load g
  u %4:f32 = f32 %2
  v %5:f32 = add %4, %3
  v store theta, %5
`,
			after: `
step:
  u %0:f64 = const 2
  u %1:f64 = const 3
  u %2:f64 = const 6
  v %3:f32 = load g
  u %4:f32 = const 6
  v %5:f32 = add %4, %3
  v store theta, %5
`,
		},
		{
			name:  "f32 of a constant rounds",
			decls: "",
			body:  "theta = 0.1 * g",
			before: `
step:
  u %0:f64 = const 0.1
  v %1:f32 = load g
  u %2:f32 = f32 %0
  v %3:f32 = mul %2, %1
  v store theta, %3
`,
			after: `
step:
  u %0:f64 = const 0.1
  v %1:f32 = load g
  u %2:f32 = const 0.1
  v %3:f32 = mul %2, %1
  v store theta, %3
`,
		},
		{
			name:  "uniform f32 op in float32",
			decls: "state m = 0",
			body:  "m = 0.1\ntheta = m * 0.1 * g",
			before: `
step:
  u %0:f64 = const 0.1
  u %1:f32 = f32 %0
  u store m, %1
  u %3:f64 = const 0.1
  u %4:f32 = f32 %3
  u %5:f32 = mul %1, %4
  v %6:f32 = load g
  v %7:f32 = mul %5, %6
  v store theta, %7
`,
			after: `
step:
  u %0:f64 = const 0.1
  u %1:f32 = const 0.1
  u store m, %1
  u %3:f64 = const 0.1
  u %4:f32 = const 0.1
  u %5:f32 = const 0.010000001
  v %6:f32 = load g
  v %7:f32 = mul %5, %6
  v store theta, %7
`,
		},
		{
			name:  "overflow to inf",
			decls: "",
			body:  "theta = (1e300 * 1e300) * g",
			before: `
step:
  u %0:f64 = const 1e+300
  u %1:f64 = const 1e+300
  u %2:f64 = mul %0, %1
  v %3:f32 = load g
  u %4:f32 = f32 %2
  v %5:f32 = mul %4, %3
  v store theta, %5
`,
			after: `
step:
  u %0:f64 = const 1e+300
  u %1:f64 = const 1e+300
  u %2:f64 = const inf
  v %3:f32 = load g
  u %4:f32 = const inf
  v %5:f32 = mul %4, %3
  v store theta, %5
`,
		},
		{
			name:  "inf minus inf is nan",
			decls: "",
			body:  "theta = (1e300 * 1e300 - 1e300 * 1e300) * g",
			before: `
step:
  u %0:f64 = const 1e+300
  u %1:f64 = const 1e+300
  u %2:f64 = mul %0, %1
  u %3:f64 = const 1e+300
  u %4:f64 = const 1e+300
  u %5:f64 = mul %3, %4
  u %6:f64 = sub %2, %5
  v %7:f32 = load g
  u %8:f32 = f32 %6
  v %9:f32 = mul %8, %7
  v store theta, %9
`,
			after: `
step:
  u %0:f64 = const 1e+300
  u %1:f64 = const 1e+300
  u %2:f64 = const inf
  u %3:f64 = const 1e+300
  u %4:f64 = const 1e+300
  u %5:f64 = const inf
  u %6:f64 = const nan
  v %7:f32 = load g
  u %8:f32 = const nan
  v %9:f32 = mul %8, %7
  v store theta, %9
`,
		},
		{
			name:  "f32 conversion overflows",
			decls: "",
			body:  "theta = 1e39 * theta",
			before: `
step:
  u %0:f64 = const 1e+39
  v %1:f32 = load theta
  u %2:f32 = f32 %0
  v %3:f32 = mul %2, %1
  v store theta, %3
`,
			after: `
step:
  u %0:f64 = const 1e+39
  v %1:f32 = load theta
  u %2:f32 = const inf
  v %3:f32 = mul %2, %1
  v store theta, %3
`,
		},
		{
			name:  "min and max keep the sign of zero",
			decls: "",
			body:  "theta = max(0, -0) + min(-0, 0) * g",
			before: `
step:
  u %0:f64 = const 0
  u %1:f64 = const 0
  u %2:f64 = neg %1
  u %3:f64 = max %0, %2
  u %4:f64 = const 0
  u %5:f64 = neg %4
  u %6:f64 = const 0
  u %7:f64 = min %5, %6
  v %8:f32 = load g
  u %9:f32 = f32 %7
  v %10:f32 = mul %9, %8
  u %11:f32 = f32 %3
  v %12:f32 = add %11, %10
  v store theta, %12
`,
			after: `
step:
  u %0:f64 = const 0
  u %1:f64 = const 0
  u %2:f64 = const -0
  u %3:f64 = const -0
  u %4:f64 = const 0
  u %5:f64 = const -0
  u %6:f64 = const 0
  u %7:f64 = const 0
  v %8:f32 = load g
  u %9:f32 = const 0
  v %10:f32 = mul %9, %8
  u %11:f32 = const -0
  v %12:f32 = add %11, %10
  v store theta, %12
`,
		},
		{
			name:  "sqrt and pow",
			decls: "",
			body:  "theta = sqrt(2) * g + 2 ** -1",
			before: `
step:
  u %0:f64 = const 2
  u %1:f64 = sqrt %0
  v %2:f32 = load g
  u %3:f32 = f32 %1
  v %4:f32 = mul %3, %2
  u %5:f64 = const 2
  u %6:f64 = const 1
  u %7:f64 = neg %6
  u %8:f64 = pow %5, %7
  u %9:f32 = f32 %8
  v %10:f32 = add %4, %9
  v store theta, %10
`,
			after: `
step:
  u %0:f64 = const 2
  u %1:f64 = const 1.4142135623730951
  v %2:f32 = load g
  u %3:f32 = const 1.4142135
  v %4:f32 = mul %3, %2
  u %5:f64 = const 2
  u %6:f64 = const 1
  u %7:f64 = const -1
  u %8:f64 = const 0.5
  u %9:f32 = const 0.5
  v %10:f32 = add %4, %9
  v store theta, %10
`,
		},
		{
			name:  "varying operands stay",
			decls: "",
			body:  "theta = (g + 1) * (2 - 3)",
			before: `
step:
  v %0:f32 = load g
  u %1:f64 = const 1
  u %2:f32 = f32 %1
  v %3:f32 = add %0, %2
  u %4:f64 = const 2
  u %5:f64 = const 3
  u %6:f64 = sub %4, %5
  u %7:f32 = f32 %6
  v %8:f32 = mul %3, %7
  v store theta, %8
`,
			after: `
step:
  v %0:f32 = load g
  u %1:f64 = const 1
  u %2:f32 = const 1
  v %3:f32 = add %0, %2
  u %4:f64 = const 2
  u %5:f64 = const 3
  u %6:f64 = const -1
  u %7:f32 = const -1
  v %8:f32 = mul %3, %7
  v store theta, %8
`,
		},
	})
}

func TestEliminateCommonSubexpressions(t *testing.T) {
	testPass(t, EliminateCommonSubexpressions, []passCase{
		{
			name:  "repeated hyper reads",
			decls: "hyper lr = 0.1",
			body:  "theta = lr * theta + lr * g",
			before: `
step:
  u %0:f64 = hyper lr
  v %1:f32 = load theta
  u %2:f32 = f32 %0
  v %3:f32 = mul %2, %1
  u %4:f64 = hyper lr
  v %5:f32 = load g
  u %6:f32 = f32 %4
  v %7:f32 = mul %6, %5
  v %8:f32 = add %3, %7
  v store theta, %8
`,
			after: `
step:
  u %0:f64 = hyper lr
  v %1:f32 = load theta
  u %2:f32 = f32 %0
  v %3:f32 = mul %2, %1
  v %4:f32 = load g
  v %5:f32 = mul %2, %4
  v %6:f32 = add %3, %5
  v store theta, %6
`,
		},
		{
			name:  "repeated loads",
			decls: "",
			body:  "theta = g * g + g",
			before: `
step:
  v %0:f32 = load g
  v %1:f32 = load g
  v %2:f32 = mul %0, %1
  v %3:f32 = load g
  v %4:f32 = add %2, %3
  v store theta, %4
`,
			after: `
step:
  v %0:f32 = load g
  v %1:f32 = mul %0, %0
  v %2:f32 = add %1, %0
  v store theta, %2
`,
		},
		{
			name:  "commutative operands",
			decls: "",
			body:  "theta = theta * g + g * theta",
			before: `
step:
  v %0:f32 = load theta
  v %1:f32 = load g
  v %2:f32 = mul %0, %1
  v %3:f32 = load g
  v %4:f32 = load theta
  v %5:f32 = mul %3, %4
  v %6:f32 = add %2, %5
  v store theta, %6
`,
			after: `
step:
  v %0:f32 = load theta
  v %1:f32 = load g
  v %2:f32 = mul %0, %1
  v %3:f32 = add %2, %2
  v store theta, %3
`,
		},
		{
			name:  "max is not commutative",
			decls: "",
			body:  "theta = max(theta, g) - max(g, theta)",
			before: `
step:
  v %0:f32 = load theta
  v %1:f32 = load g
  v %2:f32 = max %0, %1
  v %3:f32 = load g
  v %4:f32 = load theta
  v %5:f32 = max %3, %4
  v %6:f32 = sub %2, %5
  v store theta, %6
`,
			after: `
step:
  v %0:f32 = load theta
  v %1:f32 = load g
  v %2:f32 = max %0, %1
  v %3:f32 = max %1, %0
  v %4:f32 = sub %2, %3
  v store theta, %4
`,
		},
		{
			name:  "no merge across a store",
			decls: "state m = 0",
			body:  "a = m * g\nm = m + g\ntheta = a + m * g",
			before: `
step:
  v %0:f32 = load m
  v %1:f32 = load g
  v %2:f32 = mul %0, %1
  v %3:f32 = load m
  v %4:f32 = load g
  v %5:f32 = add %3, %4
  v store m, %5
  v %7:f32 = load g
  v %8:f32 = mul %5, %7
  v %9:f32 = add %2, %8
  v store theta, %9
`,
			after: `
step:
  v %0:f32 = load m
  v %1:f32 = load g
  v %2:f32 = mul %0, %1
  v %3:f32 = add %0, %1
  v store m, %3
  v %5:f32 = mul %3, %1
  v %6:f32 = add %2, %5
  v store theta, %6
`,
		},
		{
			name:  "equal constants",
			decls: "",
			body:  "theta = 2 * theta + 2 * g",
			before: `
step:
  u %0:f64 = const 2
  v %1:f32 = load theta
  u %2:f32 = f32 %0
  v %3:f32 = mul %2, %1
  u %4:f64 = const 2
  v %5:f32 = load g
  u %6:f32 = f32 %4
  v %7:f32 = mul %6, %5
  v %8:f32 = add %3, %7
  v store theta, %8
`,
			after: `
step:
  u %0:f64 = const 2
  v %1:f32 = load theta
  u %2:f32 = f32 %0
  v %3:f32 = mul %2, %1
  v %4:f32 = load g
  v %5:f32 = mul %2, %4
  v %6:f32 = add %3, %5
  v store theta, %6
`,
		},
	})
}

func TestEliminateDeadCode(t *testing.T) {
	testPass(t, EliminateDeadCode, []passCase{
		{
			name:  "dead base of a zeroth power",
			decls: "hyper lr = 0.1",
			body:  "theta = theta + (g * (lr * t)) ** 0",
			before: `
step:
  v %0:f32 = load theta
  v %1:f32 = load g
  u %2:f64 = hyper lr
  u %3:f64 = t
  u %4:f64 = mul %2, %3
  u %5:f32 = f32 %4
  v %6:f32 = mul %1, %5
  u %7:f64 = const 0
  u %8:f64 = const 1
  u %9:f32 = f32 %8
  v %10:f32 = add %0, %9
  v store theta, %10
`,
			after: `
step:
  v %0:f32 = load theta
  u %1:f64 = const 1
  u %2:f32 = f32 %1
  v %3:f32 = add %0, %2
  v store theta, %3
`,
		},
		{
			name:  "dead exponent",
			decls: "",
			body:  "theta = g ** 2",
			before: `
step:
  v %0:f32 = load g
  u %1:f64 = const 2
  u %2:f64 = const 1
  u %3:f32 = f32 %2
  v %4:f32 = mul %0, %0
  v store theta, %4
`,
			after: `
step:
  v %0:f32 = load g
  v %1:f32 = mul %0, %0
  v store theta, %1
`,
		},
		{
			name:  "unused load",
			decls: "",
			body:  "theta = theta ** 0 * g",
			before: `
step:
  v %0:f32 = load theta
  u %1:f64 = const 0
  u %2:f64 = const 1
  u %3:f32 = f32 %2
  v %4:f32 = load g
  v %5:f32 = mul %3, %4
  v store theta, %5
`,
			after: `
step:
  u %0:f64 = const 1
  u %1:f32 = f32 %0
  v %2:f32 = load g
  v %3:f32 = mul %1, %2
  v store theta, %3
`,
		},
		{
			name:  "constant operands after folding",
			decls: "",
			body:  "theta = (1 + 2) * g",
			prep:  FoldConstants,
			before: `
step:
  u %0:f64 = const 1
  u %1:f64 = const 2
  u %2:f64 = const 3
  v %3:f32 = load g
  u %4:f32 = const 3
  v %5:f32 = mul %4, %3
  v store theta, %5
`,
			after: `
step:
  v %0:f32 = load g
  u %1:f32 = const 3
  v %2:f32 = mul %1, %0
  v store theta, %2
`,
		},
	})
}

func TestHoistUniforms(t *testing.T) {
	testPass(t, HoistUniforms, []passCase{
		{
			name:  "uniform values move ahead in order",
			decls: "hyper lr = 0.1\nhyper beta = 0.9",
			body:  "x = g * lr\ntheta = x - beta ** (t + 1) * theta",
			before: `
step:
  v %0:f32 = load g
  u %1:f64 = hyper lr
  u %2:f32 = f32 %1
  v %3:f32 = mul %0, %2
  u %4:f64 = hyper beta
  u %5:f64 = t
  u %6:f64 = const 1
  u %7:f64 = add %5, %6
  u %8:f64 = pow %4, %7
  v %9:f32 = load theta
  u %10:f32 = f32 %8
  v %11:f32 = mul %10, %9
  v %12:f32 = sub %3, %11
  v store theta, %12
`,
			after: `
step:
  u %0:f64 = hyper lr
  u %1:f32 = f32 %0
  u %2:f64 = hyper beta
  u %3:f64 = t
  u %4:f64 = const 1
  u %5:f64 = add %3, %4
  u %6:f64 = pow %2, %5
  u %7:f32 = f32 %6
  v %8:f32 = load g
  v %9:f32 = mul %8, %1
  v %10:f32 = load theta
  v %11:f32 = mul %7, %10
  v %12:f32 = sub %9, %11
  v store theta, %12
`,
		},
		{
			name:  "stores stay in the kernel",
			decls: "hyper lr = 0.1\nstate m = 0",
			body:  "theta = theta - lr * g\nm = lr * 2",
			before: `
step:
  v %0:f32 = load theta
  u %1:f64 = hyper lr
  v %2:f32 = load g
  u %3:f32 = f32 %1
  v %4:f32 = mul %3, %2
  v %5:f32 = sub %0, %4
  v store theta, %5
  u %7:f64 = hyper lr
  u %8:f64 = const 2
  u %9:f64 = mul %7, %8
  u %10:f32 = f32 %9
  u store m, %10
`,
			after: `
step:
  u %0:f64 = hyper lr
  u %1:f32 = f32 %0
  u %2:f64 = hyper lr
  u %3:f64 = const 2
  u %4:f64 = mul %2, %3
  u %5:f32 = f32 %4
  v %6:f32 = load theta
  v %7:f32 = load g
  v %8:f32 = mul %1, %7
  v %9:f32 = sub %6, %8
  v store theta, %9
  u store m, %5
`,
		},
	})
}

// kernelOperand returns the uniform operand of the step's first varying
// multiplication: the host scalar a test's program multiplies g by.
func kernelOperand(t *testing.T, b *Block) *Value {
	t.Helper()
	for _, v := range b.Values {
		if v.Op == OpMul && !v.Uniform {
			return v.Args[0]
		}
	}
	t.Fatalf("no varying mul in\n%s", b)
	return nil
}

func TestFoldConstantsRoundsToFloat32(t *testing.T) {
	// Variables, not constants: Go evaluates constant expressions exactly.
	tenth, fifth, elevenTenths := float32(0.1), float32(0.2), float32(1.1)
	tests := []struct {
		name        string
		decls, body string
		want        float32
		notWant     float64 // what float64 arithmetic would give
	}{
		{"f32 of a constant", "", "theta = 0.1 * g", tenth, 0.1},
		{"uniform f32 product", "state m = 0", "m = 0.1\ntheta = m * 0.1 * g", float32(tenth * tenth), float64(float32(0.1 * 0.1))},
		{"uniform f32 sum", "state m = 0", "m = 0.2\ntheta = (m + 1.1) * g", float32(fifth + elevenTenths), float64(float32(0.2 + 1.1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := irtest.LowerStep(t, tt.decls, tt.body)
			FoldConstants(fn.Step)
			c := kernelOperand(t, fn.Step)
			if c.Op != OpConst || c.Type != F32 {
				t.Fatalf("operand of the kernel's mul is %s:%s, want an f32 const", c.Op, c.Type)
			}
			if math.Float64bits(c.Const) != math.Float64bits(float64(tt.want)) {
				t.Errorf("folded to %v, want %v (float32 arithmetic)", c.Const, tt.want)
			}
			if float64(tt.want) == tt.notWant {
				t.Fatalf("bad test: float64 arithmetic also gives %v", tt.want)
			}
		})
	}
}

func TestFoldConstantsSpecialValues(t *testing.T) {
	tests := []struct {
		body string
		want float64
	}{
		{"theta = (1e300 * 1e300) * g", math.Inf(1)},
		{"theta = (-1e300 * 1e300) * g", math.Inf(-1)},
		{"theta = (1e300 * 1e300 - 1e300 * 1e300) * g", math.NaN()},
		{"theta = sqrt(-1) * g", math.NaN()},
		{"theta = 1e39 * g", math.Inf(1)},
		{"theta = 1e-46 * g", 0},                     // below half the smallest subnormal
		{"theta = -1e-46 * g", math.Copysign(0, -1)}, // keeps its sign
		{"theta = 1e-45 * g", float64(math.SmallestNonzeroFloat32)},
		{"theta = (0 - 0) * g", 0},
		{"theta = -(0 - 0) * g", math.Copysign(0, -1)},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			fn := irtest.LowerStep(t, "", tt.body)
			FoldConstants(fn.Step)
			c := kernelOperand(t, fn.Step)
			if c.Op != OpConst || c.Type != F32 {
				t.Fatalf("operand is %s:%s, want an f32 const", c.Op, c.Type)
			}
			if math.IsNaN(tt.want) && !math.IsNaN(c.Const) ||
				!math.IsNaN(tt.want) && math.Float64bits(c.Const) != math.Float64bits(tt.want) {
				t.Errorf("folded to %v (bits %#x), want %v", c.Const, math.Float64bits(c.Const), tt.want)
			}
		})
	}
}
