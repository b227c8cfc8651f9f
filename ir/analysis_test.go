package ir_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fibergen/fibergen/internal/irtest"
	. "github.com/fibergen/fibergen/ir"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// exprStrings prints values with ExprString.
func exprStrings(vs []*Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = ExprString(v)
	}
	return out
}

func TestHostScalars(t *testing.T) {
	tests := []struct {
		name        string
		decls, body string
		want        []string
	}{
		{"none", "", "theta = g * g", nil},
		{"constants are immediates", "hyper lr = 0.1", "theta = theta - lr * g + g ** -1 + 2", []string{"lr"}},
		{"block order, each once", "hyper lr = 0.1\nhyper wd = 0", "theta = (1 - lr * wd) * theta - lr * g + lr * theta", []string{"1 - lr * wd", "lr"}},
		{"uniform f32 values", "hyper lr = 0.1\nstate m = 0", "m = lr\ntheta = theta * (m + 1)", []string{"lr", "lr + 1"}},
		{"host-only values are not passed", "hyper beta = 0.9", "theta = (1 - beta ** (t + 1)) * g", []string{"1 - beta ** (t + 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := irtest.OptimizedStep(t, tt.decls, tt.body)
			scalars := HostScalars(b)
			if got := exprStrings(scalars); cmp.Diff(tt.want, got, cmpopts.EquateEmpty()) != "" {
				t.Errorf("HostScalars = %q, want %q\n%s", got, tt.want, b)
			}
			for _, v := range scalars {
				if !v.Uniform || v.Type != F32 || v.IsConst() {
					t.Errorf("host scalar %s is %s uniform=%v", ExprString(v), v.Type, v.Uniform)
				}
			}
		})
	}
}

func TestHostScalarsOfFiber(t *testing.T) {
	src, err := os.ReadFile("../optimizers/fiber.dsl")
	if err != nil {
		t.Fatal(err)
	}
	fn, errs, err := irtest.Compile("fiber.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatalf("Compile: %v %v", errs, err)
	}
	want := []struct {
		expr    string
		perStep bool
	}{
		{"1 - omega", false},
		{"omega", false},
		{"beta1", false},
		{"1 - beta1", false},
		{"beta2", false},
		{"1 - beta2", false},
		{"1 - beta1 ** (t + 1)", true},
		{"1 - beta2 ** (t + 1)", true},
		{"(2 - omega) / (4 - 3 * omega) * sigma_w2", true},
		{"eps_v", false},
		{"1 - lr * wd", false},
		{"lr", false},
		{"eps", false},
		{"gamma", false}, // the look-ahead point's γ
	}
	got := HostScalars(fn.Step)
	if len(got) != len(want) {
		t.Fatalf("HostScalars = %q, want %d scalars", exprStrings(got), len(want))
	}
	for i, v := range got {
		if s := ExprString(v); s != want[i].expr || DependsOnStep(v) != want[i].perStep {
			t.Errorf("scalar %d: %s (per step %v), want %s (per step %v)", i, s, DependsOnStep(v), want[i].expr, want[i].perStep)
		}
	}
}

// uniformOperand lowers theta = (expr) * g and returns the f64 value of
// expr, the operand of the host scalar the kernel multiplies g by.
func uniformOperand(t *testing.T, expr string, fold bool) *Value {
	t.Helper()
	fn := irtest.LowerStep(t, "hyper lr = 0.1\nhyper beta = 0.9", "theta = ("+expr+") * g")
	if fold {
		FoldConstants(fn.Step)
	}
	v := kernelOperand(t, fn.Step)
	if v.Op == OpF32 {
		v = v.Args[0]
	}
	return v
}

func TestDependsOnStep(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{"lr", false},
		{"2", false},
		{"t", true},
		{"sigma_w2", true},
		{"1 - lr * beta", false},
		{"1 - beta ** (t + 1)", true},
		{"max(lr, sigma_w2)", true},
		{"sqrt(abs(-lr))", false},
	}
	for _, tt := range tests {
		if got := DependsOnStep(uniformOperand(t, tt.expr, false)); got != tt.want {
			t.Errorf("DependsOnStep(%s) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

// TestDependsOnStepSharedOperands checks that a deep DAG of shared
// operands (x1 = lr * lr, x2 = x1 * x1, ...) is walked once per value, not
// once per path: 2^80 paths would never finish.
func TestDependsOnStepSharedOperands(t *testing.T) {
	for _, leaf := range []Op{OpHyper, OpStepIndex} {
		b := &Block{Name: "step"}
		v := b.NewValue(leaf, F64, true)
		v.Name = "lr"
		for range 80 {
			v = b.NewValue(OpMul, F64, true, v, v)
		}
		done := make(chan bool, 1)
		go func() { done <- DependsOnStep(v) }()
		select {
		case got := <-done:
			if want := leaf == OpStepIndex; got != want {
				t.Errorf("leaf %s: DependsOnStep = %v, want %v", leaf, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("leaf %s: DependsOnStep did not return in 5s", leaf)
		}
	}
}

func TestExprString(t *testing.T) {
	tests := []struct {
		expr string
		fold bool
		want string
	}{
		{"1 - beta ** (t + 1)", false, "1 - beta ** (t + 1)"},
		{"(2 - beta) / (4 - 3 * beta) * sigma_w2", false, "(2 - beta) / (4 - 3 * beta) * sigma_w2"},
		{"(lr - beta) - 1", false, "lr - beta - 1"},
		{"lr - (beta - 1)", false, "lr - (beta - 1)"},
		{"lr / (lr * beta)", false, "lr / (lr * beta)"},
		{"lr ** beta ** t", false, "lr ** beta ** t"},
		{"(lr ** beta) ** t", false, "(lr ** beta) ** t"},
		{"-(lr + 1)", false, "-(lr + 1)"},
		{"(-lr) ** 2", false, "(-lr) ** 2"},
		{"-lr ** 2", false, "-lr ** 2"},
		{"-(-lr)", false, "--lr"},
		{"lr * -1", false, "lr * -1"},
		{"2 ** -1", false, "2 ** -1"},
		{"max(lr, t) + sqrt(abs(-2)) * min(sigma_w2, 1e-8)", false, "max(lr, t) + sqrt(abs(-2)) * min(sigma_w2, 1e-08)"},
		{"1.5e-7 * lr", false, "1.5e-07 * lr"},
		// Folded constants print as their shortest round-tripping decimal.
		{"2 ** -1 * lr", true, "0.5 * lr"},
		{"sqrt(2) * lr", true, "1.4142135623730951 * lr"},
		{"-(0 * 1) + lr", true, "-0 + lr"},
		{"(1e300 * 1e300) * lr", true, "inf * lr"},
		{"(1e300 * 1e300 - 1e300 * 1e300) * lr", true, "nan * lr"},
	}
	for _, tt := range tests {
		if got := ExprString(uniformOperand(t, tt.expr, tt.fold)); got != tt.want {
			t.Errorf("ExprString(%s) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestExprStringRoundTrip reparses ExprString's output: lowering it again
// must give the same block, so the printed parentheses keep the meaning.
func TestExprStringRoundTrip(t *testing.T) {
	for _, expr := range []string{
		"1 - beta ** (t + 1)",
		"(lr - beta) - (1 - t)",
		"lr / (beta / t) / 2",
		"lr ** -beta ** -t",
		"(-lr) ** (beta * t)",
		"-(lr * beta) - -t",
		"-(-lr)",
		"min(max(lr, -beta), sqrt(t + 1)) / abs(sigma_w2 - 1e-8)",
	} {
		printed := ExprString(uniformOperand(t, expr, false))
		a := irtest.LowerStep(t, "hyper lr = 0.1\nhyper beta = 0.9", "theta = ("+expr+") * g")
		b := irtest.LowerStep(t, "hyper lr = 0.1\nhyper beta = 0.9", "theta = ("+printed+") * g")
		if a.Step.String() != b.Step.String() {
			t.Errorf("%s printed as %s, which lowers differently:\n%s\nvs\n%s", expr, printed, a.Step, b.Step)
		}
	}
}

// TestExprStringSharedOperands checks that a value whose expression tree is
// exponentially larger than its DAG is summarized, in linear time.
func TestExprStringSharedOperands(t *testing.T) {
	b := &Block{Name: "step"}
	v := b.NewValue(OpHyper, F64, true)
	v.Name = "lr"
	small := b.NewValue(OpMul, F64, true, v, v)
	for range 80 {
		v = b.NewValue(OpMul, F64, true, v, v)
	}
	if got := ExprString(small); got != "lr * lr" {
		t.Errorf("ExprString(lr*lr) = %q", got)
	}
	start := time.Now()
	got := ExprString(v)
	if !strings.Contains(got, "more than") || len(got) > 100 {
		t.Errorf("ExprString of an 80-level square chain = %.100q, want a summary", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("ExprString took %v", d)
	}
}

// TestIsFirstStep checks which comparisons of t with a constant are 1 at
// step 0 and 0 at every later step.
func TestIsFirstStep(t *testing.T) {
	tests := []struct {
		op    Op
		c     float64
		tLeft bool
		want  bool
	}{
		{OpEq, 0, true, true}, {OpEq, 0, false, true}, {OpEq, 1, true, false},
		{OpLt, 1, true, true}, {OpLt, 0.5, true, true}, {OpLt, 0, true, false}, {OpLt, 2, true, false},
		{OpLe, 0, true, true}, {OpLe, 0.9, true, true}, {OpLe, 1, true, false}, {OpLe, -0.5, true, false},
		{OpGt, 1, false, true}, {OpGe, 0, false, true}, {OpGe, 1, false, false},
		{OpGt, 0, true, false}, {OpNe, 0, true, false}, {OpAdd, 0, true, false},
		{OpLt, 1, false, false}, {OpLe, 0, false, false}, {OpEq, 1, false, false}, {OpGt, 0.5, false, true}, {OpGe, 0.5, false, true},
	}
	for _, tt := range tests {
		b := &Block{Kind: StepBlock}
		step, c := b.NewValue(OpStepIndex, F64, true), b.NewValue(OpConst, F64, true)
		c.Const = tt.c
		args := []*Value{step, c}
		if !tt.tLeft {
			args = []*Value{c, step}
		}
		cmp := b.NewValue(tt.op, F64, true, args...)
		for _, v := range []*Value{cmp, b.NewValue(OpF32, F32, true, cmp)} {
			if got := IsFirstStep(v); got != tt.want {
				t.Errorf("IsFirstStep(%s) = %v, want %v", ExprString(v), got, tt.want)
			}
		}
	}
}
