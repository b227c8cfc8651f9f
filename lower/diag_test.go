package lower_test

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
)

// diagProgram is a one-moment optimizer whose step binds mhat and vbar as
// given, declaring clamp_mass(mhat, vbar).
func diagProgram(mhat, vbar string) string {
	return irtest.Program("hyper eps_v = 1e-8\nstate m = 0\nstate v = 0\ndiagnostic clamp_mass(mhat, vbar)",
		"m = 0.9 * m + g\nv = 0.9 * v + g * g\nmhat = "+mhat+"\nvbar = "+vbar+"\ntheta = theta - mhat / sqrt(vbar)")
}

// TestLowerClampMass checks the block of clamp_mass: the step values that
// are stored become loads of the states after the step, the uniform ones
// are recomputed, and the terms are eq(vbar, floor)·|mhat| and |mhat|.
func TestLowerClampMass(t *testing.T) {
	for _, c := range []struct{ mhat, vbar, want string }{
		{"m / (1 - 0.9 ** (t + 1))", "max(v - sigma_w2, eps_v)", `clamp_mass:
  u %0:f64 = const 1
  u %1:f64 = const 0.9
  u %2:f64 = t
  u %3:f64 = add %2, %0
  u %4:f64 = pow %1, %3
  u %5:f64 = sub %0, %4
  u %6:f32 = f32 %5
  u %7:f64 = sigma_w2
  u %8:f32 = f32 %7
  u %9:f64 = hyper eps_v
  u %10:f32 = f32 %9
  v %11:f32 = load m
  v %12:f32 = div %11, %6
  v %13:f32 = load v
  v %14:f32 = sub %13, %8
  v %15:f32 = max %14, %10
  v %16:f32 = abs %12
  v %17:f32 = eq %15, %10
  v %18:f32 = mul %17, %16
  v store num, %18
  v store den, %16
`},
		{"m", "max(v, 1e-8)", `clamp_mass:
  u %0:f32 = const 1e-08
  v %1:f32 = load m
  v %2:f32 = load v
  v %3:f32 = max %2, %0
  v %4:f32 = abs %1
  v %5:f32 = eq %3, %0
  v %6:f32 = mul %5, %4
  v store num, %6
  v store den, %4
`},
	} {
		fn, errs, err := irtest.Compile("test.dsl", []byte(diagProgram(c.mhat, c.vbar)))
		if err != nil || len(errs) > 0 {
			t.Fatalf("mhat = %s, vbar = %s: %v %v", c.mhat, c.vbar, errs, err)
		}
		if got := fn.Diags[0].Block.String(); got != c.want {
			t.Errorf("mhat = %s, vbar = %s: block\n%s\nwant\n%s", c.mhat, c.vbar, got, c.want)
		}
		if got := fn.Diags[0].Reads(fn.Func); strings.Join(got, " ") != "m v" {
			t.Errorf("reads %v, want m v", got)
		}
	}
}

// TestLowerClampMassErrors checks the positioned errors of a diagnostic
// whose values the states after the step cannot give.
func TestLowerClampMassErrors(t *testing.T) {
	for _, c := range []struct{ mhat, vbar, want string }{
		{"g", "max(v, eps_v)", "test.dsl:5:23: clamp_mass needs mhat and vbar computable from the updated states and the step's scalars, but mhat reads g, the step's privatized gradient"},
		{"m", "max(theta * theta, eps_v)", "test.dsl:5:29: clamp_mass needs mhat and vbar computable from the updated states and the step's scalars, but vbar reads theta from before the step"},
		{"m - 0.9 * m", "max(v, eps_v)", ""},
	} {
		_, errs, err := irtest.Compile("test.dsl", []byte(diagProgram(c.mhat, c.vbar)))
		got := ""
		if len(errs) > 0 {
			got = errs[0].Error()
		}
		if err != nil || got != c.want {
			t.Errorf("mhat = %s, vbar = %s: %q %v, want %q", c.mhat, c.vbar, got, err, c.want)
		}
	}
}

// TestClampMassJSON checks that a Func with a diagnostic survives its JSON
// form and that Verify rejects a diagnostic block that reads g.
func TestClampMassJSON(t *testing.T) {
	fn, _, err := irtest.Compile("test.dsl", []byte(diagProgram("m", "max(v, eps_v)")))
	if err != nil {
		t.Fatal(err)
	}
	data, err := fn.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ir.UnmarshalFunc(data)
	if err != nil || back.String() != fn.String() {
		t.Fatalf("round trip: %v\n%s\nwant\n%s", err, back, fn)
	}
	for _, v := range fn.Diags[0].Block.Values {
		if v.Op == ir.OpLoad {
			v.Name = "g"
		}
	}
	if err := ir.Verify(fn.Func); err == nil || !strings.Contains(err.Error(), "load of g in block clamp_mass") {
		t.Errorf("Verify of a diagnostic that loads g: %v", err)
	}
}
