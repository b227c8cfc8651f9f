package rng

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestPhiloxKAT checks Philox4x32-10 against the Random123 known-answer vectors (kat_vectors),
// which cuRAND reproduces too.
func TestPhiloxKAT(t *testing.T) {
	ones := ^uint32(0)
	for _, tc := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0},
			[4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{ones, ones, ones, ones}, [2]uint32{ones, ones},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		if got := Philox4x32_10(tc.ctr, tc.key); got != tc.want {
			t.Errorf("Philox4x32_10(%08x, %08x) = %08x, want %08x", tc.ctr, tc.key, got, tc.want)
		}
	}
}

// TestConstantBits pins the float32 bit pattern of every constant of the algorithm; the same
// table is in docs/noise.md for the LLVM implementation to check against.
func TestConstantBits(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  float32
		bits uint32
	}{
		{"Lg1", math.Float32frombits(logLg1Bits), 0x3f2aaaaa},
		{"Lg2", math.Float32frombits(logLg2Bits), 0x3eccce13},
		{"Lg3", math.Float32frombits(logLg3Bits), 0x3e91e9ee},
		{"Lg4", math.Float32frombits(logLg4Bits), 0x3e789e26},
		{"ln2_hi", math.Float32frombits(logLn2HiBits), 0x3f317180},
		{"ln2_lo", math.Float32frombits(logLn2LoBits), 0x3717f7d1},
		{"S1", sinS1, 0xbe2aaaa3},
		{"S2", sinS2, 0x3c08839e},
		{"S3", sinS3, 0xb94ca1f9},
		{"C1", cosC1, 0x3d2aaaa5},
		{"C2", cosC2, 0xbab6061a},
		{"C3", cosC3, 0x37ccf5ce},
		{"pi/2^31", angleStep, 0x30c90fdb},
		{"2^-32", twoPowM32, 0x2f800000},
	} {
		if b := math.Float32bits(tc.got); b != tc.bits {
			t.Errorf("%s = %#08x (%g), want %#08x", tc.name, b, tc.got, tc.bits)
		}
	}
}

// golden holds draws of the current scheme (Version); the LLVM kernels are checked against the
// same values. Changing any of them means changing Version.
var golden = []struct {
	seed       uint64
	step, site uint32
	elem       uint64
	bits       uint32
}{
	{42, 0, 0, 0, 0xbf785e5c},
	{42, 0, 0, 1, 0x3e46ace8},
	{42, 0, 0, 2, 0xbf9e28d3},
	{42, 0, 0, 3, 0x3ff6433c},
	{42, 0, 0, 4, 0xbd95e033},
	{42, 1, 0, 0, 0x40082c16},
	{42, 0, 1, 0, 0xbfd880f6},
	{43, 0, 0, 0, 0xbee40c9c},
	{0, 0, 0, 0, 0x3f7dbb31},
	{^uint64(0), ^uint32(0), ^uint32(0), ^uint64(0), 0x3f98315f},
	{0x0123456789abcdef, 1000000, 7, 1 << 40, 0x3f89e0cd},
}

func TestNormalGolden(t *testing.T) {
	for _, g := range golden {
		if got := math.Float32bits(Normal(g.seed, g.step, g.site, g.elem)); got != g.bits {
			t.Errorf("Normal(%#x, %d, %d, %d) = %#08x (%g), want %#08x (%g)", g.seed, g.step, g.site,
				g.elem, got, math.Float32frombits(got), g.bits, math.Float32frombits(g.bits))
		}
	}
}

// TestNormal4MatchesNormal checks that the four-at-a-time path gives the same bits as the
// one-element path, over many groups, seeds, steps and sites, including extreme values.
func TestNormal4MatchesNormal(t *testing.T) {
	seeds := []uint64{0, 1, 42, 0xdeadbeefcafef00d, ^uint64(0)}
	steps := []uint32{0, 1, 2, 1 << 31, ^uint32(0)}
	sites := []uint32{0, 1, 7, ^uint32(0)}
	groupBases := []uint64{0, 1 << 30, 1 << 32, 1<<62 - 1000}
	n := 0
	for _, seed := range seeds {
		for _, step := range steps {
			for _, site := range sites {
				for _, base := range groupBases {
					for g := base; g < base+200 && g < 1<<62; g++ {
						four := Normal4(seed, step, site, g)
						for i, z := range four {
							e := 4*g + uint64(i)
							if one := Normal(seed, step, site, e); math.Float32bits(one) != math.Float32bits(z) {
								t.Fatalf("seed %#x step %d site %d elem %d: Normal = %#08x, Normal4 = %#08x",
									seed, step, site, e, math.Float32bits(one), math.Float32bits(z))
							}
							n++
						}
					}
				}
			}
		}
	}
	// Every Philox output pair, not just a few: drive the radius and angle words directly.
	for i := uint32(0); i < 1<<16; i++ {
		xr, xa := i*0x10001+0x9e3779b9*i, i*0x7f4a7c15^0xffff0000
		r := boxMullerRadius(xr)
		q, a := angle(xa)
		sn, cs := sin32(a), cos32(a)
		for lane := uint32(0); lane < 2; lane++ {
			want := r * cosQuadrant(q-lane, sn, cs)
			qq := q - lane
			var v float32
			if qq&1 == 0 {
				v = cos32(a)
			} else {
				v = sin32(a)
			}
			if qq&3 == 1 || qq&3 == 2 {
				v = -v
			}
			if got := r * v; math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("xr %#x xa %#x lane %d: %#08x vs %#08x", xr, xa, lane, math.Float32bits(got), math.Float32bits(want))
			}
		}
	}
	t.Logf("%d elements compared", n)
}

// TestQuadrant checks the angle reduction: q·π/2 + x equals 2π(xa+0.5)/2^32 up to float32
// rounding, |x| <= float32(π/4), and the quadrant tables give cos and sin of the full angle.
func TestQuadrant(t *testing.T) {
	for _, xa := range []uint32{0, 1, 0x1fffffff, 0x20000000, 0x3fffffff, 0x40000000, 0x5fffffff,
		0x60000000, 0x7fffffff, 0x80000000, 0xdfffffff, 0xe0000000, 0xfffffffe, 0xffffffff} {
		q, x := angle(xa)
		if math.Abs(float64(x)) > float64(float32(math.Pi/4)) {
			t.Errorf("xa %#x: |x| = %g > π/4", xa, x)
		}
		theta := 2 * math.Pi * (float64(xa) + 0.5) / (1 << 32)
		if d := math.Remainder(float64(q)*math.Pi/2+float64(x)-theta, 2*math.Pi); math.Abs(d) > 1e-7 {
			t.Errorf("xa %#x: q %d x %g: angle off by %g", xa, q, x, d)
		}
		sn, cs := sin32(x), cos32(x)
		if c := float64(cosQuadrant(q, sn, cs)); math.Abs(c-math.Cos(theta)) > 1e-6 {
			t.Errorf("xa %#x: cos = %g, want %g", xa, c, math.Cos(theta))
		}
		if s := float64(cosQuadrant(q-1, sn, cs)); math.Abs(s-math.Sin(theta)) > 1e-6 {
			t.Errorf("xa %#x: sin = %g, want %g", xa, s, math.Sin(theta))
		}
	}
}

// TestRadiusEnds checks the two ends of the radius: xr = 0 gives u = 2^-33, the largest radius
// sqrt(66 ln 2); the largest xr round to u = 1 and a radius of -0 (sqrt(-2 * +0) = sqrt(-0)).
func TestRadiusEnds(t *testing.T) {
	if r, want := boxMullerRadius(0), math.Sqrt(66*math.Ln2); math.Abs(float64(r)-want) > 1e-6 {
		t.Errorf("radius(0) = %g, want %g", r, want)
	}
	if r := boxMullerRadius(^uint32(0)); math.Float32bits(r) != 0x80000000 {
		t.Errorf("radius(0xffffffff) = %g (%#08x), want -0", r, math.Float32bits(r))
	}
}

// TestCoreSource checks that the embedded core is what the code generator may splice: it imports
// only "math", declares only unexported functions and constants (no variables, no init), and
// type-checks on its own under another package name.
func TestCoreSource(t *testing.T) {
	if !strings.Contains(CoreSource, "func philox4x32(") {
		t.Fatal("CoreSource does not contain func philox4x32(")
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "core.go", CoreSource, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		imports = append(imports, p)
	}
	if len(imports) != 1 || imports[0] != "math" {
		t.Errorf("core.go imports %q, want only \"math\"", imports)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() || d.Name.Name == "init" || d.Recv != nil {
				t.Errorf("core.go declares func %s; only unexported plain functions are allowed", d.Name.Name)
			}
		case *ast.GenDecl:
			if d.Tok != token.CONST && d.Tok != token.IMPORT {
				t.Errorf("core.go has a %s declaration; only const and func are allowed", d.Tok)
			}
			for _, s := range d.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						if n.IsExported() {
							t.Errorf("core.go exports %s", n.Name)
						}
					}
				}
			}
		}
	}
	// Put it in another package, as the code generator does, and type-check it alone.
	body := CoreSource[strings.Index(CoreSource, "\npackage rng\n")+len("\npackage rng\n"):]
	src := "package generated\n" + body
	g, err := parser.ParseFile(fset, "generated.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("example.com/generated", fset, []*ast.File{g}, nil); err != nil {
		t.Errorf("core.go does not type-check on its own: %v", err)
	}
}

func ExampleNormal() {
	// Elements 0..3 of the gradient noise (site 0) at step 0 under seed 42, then element 0 at
	// step 1: a pure function of its arguments, in any order, on any device.
	for e := uint64(0); e < 4; e++ {
		fmt.Printf("%.7f\n", Normal(42, 0, 0, e))
	}
	fmt.Printf("%.7f\n", Normal(42, 1, 0, 0))
	fmt.Println(Normal4(42, 0, 0, 0) == [4]float32{Normal(42, 0, 0, 0), Normal(42, 0, 0, 1),
		Normal(42, 0, 0, 2), Normal(42, 0, 0, 3)})
	// Output:
	// -0.9701898
	// 0.1940190
	// -1.2356209
	// 1.9239268
	// 2.1276908
	// true
}
