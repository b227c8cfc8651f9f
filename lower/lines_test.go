package lower_test

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/lower"
)

// TestLowerLines holds the IR of a row state's update and of a row value
// read per coordinate, optimized: the host part computes the row values
// in float64 and stores the state (class rows), the kernel reads the row
// value through f32.
func TestLowerLines(t *testing.T) {
	b := irtest.OptimizedStep(t, "hyper beta = 0.9\nstate r: rows = 0", "r = beta * r + rowmean(g * g)\ntheta = theta - g / sqrt(r + mean(r))")
	want := `
step:
  u %0:f64 = hyper beta
  rows %1:f64 = load r
  rows %2:f64 = mul %0, %1
  rows %3:f64 = reducerows r0
  u %4:f64 = cols
  rows %5:f64 = div %3, %4
  rows %6:f64 = add %2, %5
  rows store r, %6
  u %8:f64 = linessum %6
  u %9:f64 = rows
  u %10:f64 = div %8, %9
  rows %11:f64 = add %6, %10
  rows %12:f64 = sqrt %11
  v %13:f32 = load g
  v %14:f32 = load theta
  v %15:f32 = f32 %12
  v %16:f32 = div %13, %15
  v %17:f32 = sub %14, %16
  v store theta, %17
`
	if got := b.String(); !irtest.SameDump(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestLowerLinesRefused: what one reduction pass cannot compute is refused
// at the reduction, with the reason.
func TestLowerLinesRefused(t *testing.T) {
	for _, tt := range []struct{ decls, body, want string }{
		{"state r: rows = 0", "r = rowmean(g)\ntheta = theta - mean(g / r) * g",
			"5:17: mean reduces g / r, which reads a rowsum, rowmean, colsum or colmean: fibergen runs one reduction pass"},
		{"state c: cols = 1", "u = norm(g / c)\nc = c + colsum(g)\ntheta = theta - u * c",
			"4:5: norm reduces g / c, which reads a value per row or column: the reduction pass does not read them yet"},
		{"state c: cols = 1", "c = c + colsum(g / norm(g))\ntheta = theta - c",
			"4:9: colsum reduces g / norm(g), which reads a norm, sum, mean, max or min: fibergen runs one reduction pass"},
		{"state r: rows = 0\nstate m = 0", "m = 1\nr = r + rowsum(m)\ntheta = theta - r * m",
			"6:9: rowsum reduces m, which holds a value per step here: a row or column reduction is of a per-coordinate value"},
	} {
		src := irtest.Program(tt.decls, tt.body)
		f, info, errs := dsl.Parse("x.dsl", []byte(src))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", src, errs)
		}
		_, _, err := lower.Build(f, info)
		if err == nil || !strings.Contains(err.Error(), "x.dsl:"+tt.want) {
			t.Errorf("%s:\nerr = %v\nwant %q", src, err, tt.want)
		}
	}
}

// TestLowerLinesNames: line states may take the names the reduce block
// and clamp_mass give their stores (r0, num), and a clamp_mass that reads
// a value per row is refused at the argument.
func TestLowerLinesNames(t *testing.T) {
	irtest.Build(t, irtest.Program("hyper eps_v = 1e-8\nstate r0: rows = 0\nstate num: cols = 0\nstate m = 0\ndiagnostic clamp_mass(m, vbar)",
		"r0 = 0.5 * r0 + rowmean(g * g)\nnum = num + colsum(g) + sum(g)\nm = 0.9 * m + g\nvbar = max(m * m, eps_v)\ntheta = theta - g / sqrt(r0 + 1) - m / sqrt(vbar) + num"))
	src := irtest.Program("hyper eps_v = 1e-8\nstate r: rows = 1\nstate m = 0\ndiagnostic clamp_mass(m, vbar)",
		"r = 0.9 * r + rowmean(g * g)\nm = 0.9 * m + g\nvbar = max(m * r, eps_v)\ntheta = theta - m / sqrt(vbar)")
	f, info, errs := dsl.Parse("x.dsl", []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := "x.dsl:5:26: clamp_mass needs m and vbar computable from the updated states and the step's scalars, but vbar reads a value per row, which the diagnostic's kernel does not read"
	if _, _, err := lower.Build(f, info); err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestBuildUnstableThroughReduction: a recursion that a reduction adds
// noise to, or that the noise reaches otherwise than linearly, is checked
// for growth as a linear filter is (each once passed at rho = 1.5, where
// v grows without bound).
func TestBuildUnstableThroughReduction(t *testing.T) {
	for _, tt := range []struct{ rho, update, want string }{
		{"1.5", "0.1 * mean(g)", "x.dsl:3:7: state v at the defaults: the filter of state v is unstable at rho=1.5"},
		{"0.9", "0.1 * mean(g)", ""},
		{"1.5", "(1 - rho) * g * g", "x.dsl:3:7: state v at the defaults: the filter of state v is unstable at rho=1.5"}, // Adam's v: noise not linear, recursion checked
		{"1.5", "mean(g) * theta", "x.dsl:3:7: state v at the defaults: the filter of state v is unstable at rho=1.5"},
		// a state per row or column: its own recursion, its input a row or column sum
		{"1.5", "rowmean(g * g)", "x.dsl:3:7: state v at the defaults: the filter of state v is unstable at rho=1.5"},
		{"-1.5", "0.1 * colsum(g)", "x.dsl:3:7: state v at the defaults: the filter of state v is unstable at rho=-1.5"},
		{"0.9", "rowmean(g * g)", ""},
		{"1.5", "rowmean(g * g) * mean(v)", ""}, // feedback through a sum of its own values: not a fixed recursion, unchecked
	} {
		decl, use := "state v = 0", "theta = theta - v"
		if strings.Contains(tt.update, "row") || strings.Contains(tt.update, "col") {
			axis := map[bool]string{true: "rows", false: "cols"}[strings.Contains(tt.update, "row")]
			decl, use = "state v: "+axis+" = 0", "theta = theta - g * v"
		}
		src := irtest.Program("hyper rho = "+tt.rho+"\n"+decl, "v = rho * v + "+tt.update+"\n"+use)
		f, info, errs := dsl.Parse("x.dsl", []byte(src))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		_, _, err := lower.Build(f, info)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("rho = %s: err = %v, want %q", tt.rho, err, tt.want)
		}
	}
}

// TestBuildUnstableBesideLines: a state per coordinate that reads a state
// per row fed by its own row sums is checked on its own recursion, the row
// value an input (it is the same along the row), as before states per row
// were variables of the growth check.
func TestBuildUnstableBesideLines(t *testing.T) {
	src := "optimizer x\nstate r: rows = 0\nstate v = 0\nstep {\n\tq = r\n\tr = 0.9 * r + rowmean(v)\n\tv = 1.5 * v + q + g * g\n\ttheta = theta - 0.001 * g / sqrt(v + 1)\n}\n"
	f, info, errs := dsl.Parse("x.dsl", []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, _, err := lower.Build(f, info)
	if want := "x.dsl:3:7: state v at the defaults: the filter of state v is unstable"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
