package lower_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/lower"
)

func TestLowerPowers(t *testing.T) {
	tests := []struct {
		name        string
		decls, body string
		want        string // optimized step block
	}{
		{"cube is two multiplications from the left", "", "theta = g ** 3", `
step:
  v %0:f32 = load g
  v %1:f32 = mul %0, %0
  v %2:f32 = mul %1, %0
  v store theta, %2
`},
		{"negative power divides one", "", "theta = g ** -2", `
step:
  u %0:f32 = const 1
  v %1:f32 = load g
  v %2:f32 = mul %1, %1
  v %3:f32 = div %0, %2
  v store theta, %3
`},
		{"zeroth power is the constant one", "", "theta = g ** 0", `
step:
  u %0:f32 = const 1
  u store theta, %0
`},
		{"first power is the base", "", "theta = g ** 1", `
step:
  v %0:f32 = load g
  v store theta, %0
`},
		{"parenthesized negative exponent", "", "theta = g ** (-1)", `
step:
  u %0:f32 = const 1
  v %1:f32 = load g
  v %2:f32 = div %0, %1
  v store theta, %2
`},
		{"uniform power stays a pow", "hyper beta = 0.9", "theta = beta ** (t + 1) * g", `
step:
  u %0:f64 = hyper beta
  u %1:f64 = t
  u %2:f64 = const 1
  u %3:f64 = add %1, %2
  u %4:f64 = pow %0, %3
  u %5:f32 = f32 %4
  v %6:f32 = load g
  v %7:f32 = mul %5, %6
  v store theta, %7
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := irtest.OptimizedStep(t, tt.decls, tt.body).String(); !irtest.SameDump(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestLowerLargestPower(t *testing.T) {
	for _, n := range []int{lang.MaxPowExponent, -lang.MaxPowExponent} {
		b := irtest.OptimizedStep(t, "", "theta = g ** "+strconv.Itoa(n))
		muls, divs := count(b, ir.OpMul), count(b, ir.OpDiv)
		wantDivs := 0
		if n < 0 {
			wantDivs = 1
		}
		if muls != lang.MaxPowExponent-1 || divs != wantDivs {
			t.Errorf("g ** %d: %d muls and %d divs, want %d and %d", n, muls, divs, lang.MaxPowExponent-1, wantDivs)
		}
	}
}

func count(b *ir.Block, op ir.Op) int {
	n := 0
	for _, v := range b.Values {
		if v.Op == op {
			n++
		}
	}
	return n
}

func TestLowerReadsNewStateValue(t *testing.T) {
	fn := irtest.LowerStep(t, "state m = 0", "m = m + g\ntheta = theta - m")
	want := `
step:
  v %0:f32 = load m
  v %1:f32 = load g
  v %2:f32 = add %0, %1
  v store m, %2
  v %4:f32 = load theta
  v %5:f32 = sub %4, %2
  v store theta, %5
`
	if got := fn.Step.String(); !irtest.SameDump(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLowerStateAssignedUniformValue(t *testing.T) {
	fn := irtest.LowerStep(t, "hyper lr = 0.1\nstate m = 0", "m = lr\ntheta = theta * (m + 1)")
	want := `
step:
  u %0:f64 = hyper lr
  u %1:f32 = f32 %0
  u store m, %1
  v %3:f32 = load theta
  u %4:f64 = const 1
  u %5:f32 = f32 %4
  u %6:f32 = add %1, %5
  v %7:f32 = mul %3, %6
  v store theta, %7
`
	if got := fn.Step.String(); !irtest.SameDump(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if count(fn.Step, ir.OpLoad) != 1 {
		t.Errorf("m is loaded after being assigned:\n%s", fn.Step)
	}
}

func TestLowerLocalsAreNotStored(t *testing.T) {
	fn := irtest.LowerStep(t, "hyper lr = 0.1", "c = 1 - lr\nd = c * g\ntheta = d")
	var names []string
	for _, s := range fn.Step.Stores() {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "theta" {
		t.Errorf("step stores %v, want only theta", names)
	}
	// c is uniform: computed in f64, converted once for the kernel.
	if n := count(fn.Step, ir.OpF32); n != 1 {
		t.Errorf("%d f32 conversions, want 1:\n%s", n, fn.Step)
	}
}

func TestLowerInitAndObserve(t *testing.T) {
	src := irtest.Program("hyper lr = 0.5\nstate m = lr * 2\nstate v = 1\nobserve two_point(a = lr / 2, lookahead = t)", "m = g\nv = m\ntheta = v")
	fn := irtest.Lower(t, src)
	if err := ir.Optimize(fn); err != nil {
		t.Fatal(err)
	}
	want := `
init:
  u %0:f64 = hyper lr
  u %1:f64 = const 2
  u %2:f64 = mul %0, %1
  u %3:f32 = f32 %2
  u %4:f32 = const 1
  u %5:f32 = const 0
  u store m, %3
  u store v, %4
  u store lookahead, %5
observe:
  u %0:f64 = hyper lr
  u %1:f64 = const 2
  u %2:f64 = div %0, %1
  u %3:f64 = t
  u store a, %2
  u store lookahead, %3
`
	if got := fn.Init.String() + fn.ObsArgs.String(); !irtest.SameDump(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if fn.Observe == nil || fn.Observe.Kind != "two_point" || strings.Join(fn.Observe.Args, ",") != "a,lookahead" {
		t.Errorf("Observe = %+v", fn.Observe)
	}
}

// TestLowerLookahead checks the look-ahead point a two_point step writes:
// θ_new + γ·(θ_new − θ_old) in float32 with γ a host scalar, stored last.
func TestLowerLookahead(t *testing.T) {
	src := irtest.Program("hyper lr = 0.5\nhyper gamma = 0.7\nobserve two_point(a = lr, lookahead = 2 * gamma)", "theta = theta - lr * g")
	fn := irtest.Lower(t, src)
	if err := ir.Optimize(fn); err != nil {
		t.Fatal(err)
	}
	want := `
step:
  u %0:f64 = hyper lr
  u %1:f32 = f32 %0
  u %2:f64 = const 2
  u %3:f64 = hyper gamma
  u %4:f64 = mul %2, %3
  u %5:f32 = f32 %4
  v %6:f32 = load theta
  v %7:f32 = load g
  v %8:f32 = mul %1, %7
  v %9:f32 = sub %6, %8
  v store theta, %9
  v %11:f32 = sub %9, %6
  v %12:f32 = mul %5, %11
  v %13:f32 = add %9, %12
  v store lookahead, %13
`
	if got := fn.Step.String(); !irtest.SameDump(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := strings.Join(fn.States, " "); got != "lookahead" {
		t.Errorf("states %q, want the added lookahead", got)
	}
}

// TestLowerUncheckedFile gives Lower files that did not pass Check: it must
// report an error, not panic.
func TestLowerUncheckedFile(t *testing.T) {
	tests := []struct {
		name, src string
		want      string
	}{
		{"no step", "optimizer p\n", "has no step block"},
		{"per-coordinate pow with a uniform exponent", irtest.Program("", "theta = g ** t"), "constant integer exponent"},
		{"per-coordinate pow with a fraction", irtest.Program("", "theta = g ** 0.5"), "constant integer exponent"},
		{"undefined name", irtest.Program("", "theta = q"), "unresolved name q"},
		{"unknown function", irtest.Program("", "theta = f(g)"), "cannot lower call of f"},
		{"wrong arity", irtest.Program("", "theta = max(g, g, g)"), "cannot lower call of max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, info, errs := dsl.Parse("bad.dsl", []byte(tt.src))
			if len(errs) == 0 {
				t.Fatalf("bad test: source checks clean")
			}
			_, _, err := lower.Lower(f, info)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Lower: err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestBuildNonFiniteDefaults: an initial value or a host scalar that is NaN
// or ±Inf at the defaults is an error in the source — at the state's
// initial value, or at the step — rather than a run that spoils every
// coordinate.
func TestBuildNonFiniteDefaults(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"optimizer x\nhyper z = 0\nstate m = z / z\nstep {\n\tm = m\n\ttheta = theta - g\n}\n",
			"x.dsl:3:11: at the defaults: the initial value of state m is NaN at z=0: it must be finite"},
		{"optimizer x\nhyper big = 1e30\nstate m = big * big\nstep {\n\tm = m\n\ttheta = theta - g\n}\n",
			"x.dsl:3:11: at the defaults: the initial value of state m is +Inf at big=1e+30: it must be finite"}, // float32 overflows
		{"optimizer x\nhyper lr = 1e200\nhyper b = 1e200\nstep {\n\ttheta = theta - lr * b * g\n}\n",
			"x.dsl:4:1: at the defaults: the host value S0 = lr * b is +Inf at step 0 with lr=1e+200, b=1e+200: it must be finite"},
	} {
		f, info, errs := dsl.Parse("x.dsl", []byte(c.src))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", c.src, errs)
		}
		_, _, err := lower.Build(f, info)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\ngot  %v\nwant %s", c.src, err, c.want)
		}
	}
}

// TestBuildLimits: attenuation of a filter past MaxNumericFilterStates
// without a closed form, and of a state whose coefficient grows past
// noise.MaxCoefBits, are errors at the call, found in milliseconds.
func TestBuildLimits(t *testing.T) {
	emaChain := func(k int) string {
		var b strings.Builder
		b.WriteString("optimizer x\nhyper b = 0.5 in (0, 1)\n")
		for i := range k {
			b.WriteString("state e" + strconv.Itoa(i) + " = 0\n")
		}
		b.WriteString("step {\n\te0 = b * e0 + (1 - b) * g\n")
		for i := 1; i < k; i++ {
			b.WriteString("\te" + strconv.Itoa(i) + " = b * e" + strconv.Itoa(i) + " + (1 - b) * e" + strconv.Itoa(i-1) + "\n")
		}
		b.WriteString("\ttheta = theta - 0.1 * (e" + strconv.Itoa(k-1) + " - attenuation(e" + strconv.Itoa(k-1) + ") * sigma_w2)\n}\n")
		return b.String()
	}
	productChain := "optimizer x\nstate s = 0\nstep {\n\tx0 = g\n" + func() string {
		var b strings.Builder
		for i := 1; i < 1000; i++ {
			b.WriteString("\tx" + strconv.Itoa(i) + " = x" + strconv.Itoa(i-1) + " * 1.0001\n")
		}
		return b.String()
	}() + "\ts = 0.5 * s + x999\n\ttheta = theta - attenuation(s) * sigma_w2\n}\n"
	for _, c := range []struct{ name, src, want string }{
		{"16 states", emaChain(lower.MaxNumericFilterStates), ""},
		{"17 states", emaChain(lower.MaxNumericFilterStates + 1), "its filter has 17 states and no closed form"},
		{"a coefficient of 1.0001^999", productChain, "has grown past 4096 bits of exact arithmetic"},
	} {
		f, info, errs := dsl.Parse("x.dsl", []byte(c.src))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", c.name, errs)
		}
		_, _, err := lower.Build(f, info)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want …%s…", c.name, err, c.want)
		}
	}
}

// TestBoundedFilters: every state the noise reaches linearly gets a filter
// checked for growth — an accumulator (radius 1) is legal, c = rho*c + g at
// rho > 1 is an error at its declaration at the defaults — and a state
// that attenuation names keeps its stricter filter.
func TestBoundedFilters(t *testing.T) {
	src := func(rho string) string {
		return "optimizer x\nhyper rho = " + rho + "\nstate c = 0\nstate s = 0\nstep {\n\tc = rho * c + g\n\ts = s + g\n\ttheta = theta - 0.1 * c\n}\n"
	}
	f, info, errs := dsl.Parse("x.dsl", []byte(src("0.9")))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	fn, _, err := lower.Build(f, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"c", "s"} {
		if fl := fn.Filter(s); fl == nil || !fl.Bounded {
			t.Errorf("state %s: filter %+v, want a bounded one", s, fl)
		}
	}
	if err := fn.CheckStability([]float64{1.2}); err == nil ||
		err.Error() != "the filter of state c is unstable at rho=1.2: its spectral radius is 1.2, above 1, so c grows without bound (it is stable where 1 - rho > 0 and 1 + rho > 0)" {
		t.Errorf("rho = 1.2: %v", err)
	}
	if err := fn.CheckStability([]float64{1}); err != nil {
		t.Errorf("rho = 1, a radius of exactly 1: %v", err)
	}
	fn.DropBoundedFilters()
	if err := fn.CheckStability([]float64{1.2}); err != nil || len(fn.Filters) != 0 {
		t.Errorf("without the bounded filters: %v, %d filters", err, len(fn.Filters))
	}

	f, info, _ = dsl.Parse("x.dsl", []byte(src("1.2")))
	if _, _, err := lower.Build(f, info); err == nil || !strings.HasPrefix(err.Error(), "x.dsl:3:7: state c at the defaults: the filter of state c is unstable at rho=1.2") {
		t.Errorf("an unstable default: %v", err)
	}
}

// TestBuildFloat32Overflow: a constant finite in float64 but not in
// float32, where it meets a per-coordinate value, is an error at the step.
func TestBuildFloat32Overflow(t *testing.T) {
	f, info, errs := dsl.Parse("x.dsl", []byte("optimizer x\nstep {\n\ttheta = theta - 1e39 * g\n}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, _, err := lower.Build(f, info)
	if err == nil || err.Error() != "x.dsl:2:1: a constant of the step is +Inf in float32, where it meets a per-coordinate value: constants must be finite in float32 there (at most 3.4028235e+38)" {
		t.Errorf("1e39 * g: %v", err)
	}
}

// TestLowerStartFromThetaAndG checks a state whose initial value reads
// theta or g: 0 in its buffer, and every read of it in the step is
// select(t == 0, INIT, buffer), INIT of theta and g before the step.
func TestLowerStartFromThetaAndG(t *testing.T) {
	src := irtest.Program("hyper lr = 0.5\nstate m = 2 * g\nstate z = theta", "m = 0.5 * m + g\nz = z + m\ntheta = theta - lr * z")
	fn := irtest.Lower(t, src)
	if err := ir.Optimize(fn); err != nil {
		t.Fatal(err)
	}
	want := `
init:
  u %0:f32 = const 0
  u store m, %0
  u store z, %0
step:
  u %0:f32 = const 2
  u %1:f64 = t
  u %2:f64 = const 0
  u %3:f64 = eq %1, %2
  u %4:f32 = f32 %3
  u %5:f32 = const 0.5
  u %6:f64 = hyper lr
  u %7:f32 = f32 %6
  v %8:f32 = load g
  v %9:f32 = mul %0, %8
  v %10:f32 = load m
  v %11:f32 = select %4, %9, %10 start m
  v %12:f32 = load theta
  v %13:f32 = load z
  v %14:f32 = select %4, %12, %13 start z
  v %15:f32 = mul %5, %11
  v %16:f32 = add %15, %8
  v store m, %16
  v %18:f32 = add %14, %16
  v store z, %18
  v %20:f32 = mul %7, %18
  v %21:f32 = sub %12, %20
  v store theta, %21
`
	if got := fn.Init.String() + fn.Step.String(); !irtest.SameDump(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for state, start := range map[string]string{"m": "2 * g", "z": "theta"} {
		if v := ir.StartOf(fn, state); v == nil || ir.ExprString(v) != start {
			t.Errorf("StartOf(%s) = %v, want %s", state, v, start)
		}
	}
}
