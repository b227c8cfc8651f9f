package dsl_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/internal/golden"
)

// parseOK parses and checks src, failing the test on any error.
func parseOK(t *testing.T, name string, src []byte) *dsl.File {
	t.Helper()
	f, _, errs := dsl.Parse(name, src)
	if len(errs) > 0 {
		var b bytes.Buffer
		errs.Print(&b, src)
		t.Fatalf("%s:\n%s", name, b.String())
	}
	return f
}

// TestParseGolden holds the canonical form of valid files.
func TestParseGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/parse/*.dsl")
	if len(files) < 6 {
		t.Fatalf("found %d files in testdata/parse, want at least 6", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := parseOK(t, path, readFile(t, path))
			golden.Check(t, strings.TrimSuffix(path, ".dsl")+".golden", dsl.Format(f))
		})
	}
}

// validFiles lists every valid .dsl file the tests know.
func validFiles(t *testing.T) []string {
	var files []string
	for _, glob := range []string{"testdata/parse/*.dsl", "../optimizers/*.dsl"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d valid files", len(files))
	}
	return files
}

// TestFormatRoundTrip checks that Format's output is valid and a fixed
// point: formatting what Format printed changes nothing.
func TestFormatRoundTrip(t *testing.T) {
	for _, path := range validFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			once := dsl.Format(parseOK(t, path, readFile(t, path)))
			twice := dsl.Format(parseOK(t, path+" (formatted)", once))
			if !bytes.Equal(once, twice) {
				t.Errorf("Format is not a fixed point:\nonce:\n%s\ntwice:\n%s", once, twice)
			}
		})
	}
}

// shape prints the tree of x with every operation in parentheses, so that
// two expressions of the same shape print the same.
func shape(x dsl.Expr) string {
	switch x := x.(type) {
	case *dsl.NumberLit:
		return x.Lit
	case *dsl.Ident:
		return x.Name
	case *dsl.ParenExpr:
		return shape(x.X)
	case *dsl.UnaryExpr:
		return "(" + x.Op.String() + shape(x.X) + ")"
	case *dsl.BinaryExpr:
		return "(" + shape(x.X) + " " + x.Op.String() + " " + shape(x.Y) + ")"
	case *dsl.CallExpr:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = shape(a)
		}
		return x.Fun.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return fmt.Sprintf("%T", x)
}

// parseExpr parses one expression through a state's initial value.
func parseExpr(t *testing.T, expr string) dsl.Expr {
	t.Helper()
	f, errs := dsl.ParseFile("x.dsl", []byte("optimizer x\nstate s = "+expr+"\n"))
	if len(errs) > 0 || len(f.States) != 1 {
		t.Fatalf("parse %q: %v", expr, errs)
	}
	return f.States[0].Init
}

func TestExprString(t *testing.T) {
	tests := []struct{ in, want, shape string }{
		{"-x ** 2", "-x ** 2", "(-(x ** 2))"},
		{"(-x) ** 2", "(-x) ** 2", "((-x) ** 2)"},
		{"-(x ** 2)", "-x ** 2", "(-(x ** 2))"},
		{"a ** b ** c", "a ** b ** c", "(a ** (b ** c))"},
		{"(a ** b) ** c", "(a ** b) ** c", "((a ** b) ** c)"},
		{"a ** (b ** c)", "a ** b ** c", "(a ** (b ** c))"},
		{"2 ** -1", "2 ** -1", "(2 ** (-1))"},
		{"2 ** (-1)", "2 ** -1", "(2 ** (-1))"},
		{"2 ** -x ** 2", "2 ** -x ** 2", "(2 ** (-(x ** 2)))"},
		{"(a - b) - c", "a - b - c", "((a - b) - c)"},
		{"a - (b - c)", "a - (b - c)", "(a - (b - c))"},
		{"a - (b + c)", "a - (b + c)", "(a - (b + c))"},
		{"a + (b - c)", "a + (b - c)", "(a + (b - c))"},
		{"a / (b * c)", "a / (b * c)", "(a / (b * c))"},
		{"(a / b) * c", "a / b * c", "((a / b) * c)"},
		{"a * (b / c)", "a * (b / c)", "(a * (b / c))"},
		{"(a + b) * c", "(a + b) * c", "((a + b) * c)"},
		{"a + b * c", "a + b * c", "(a + (b * c))"},
		{"(a * b) + c", "a * b + c", "((a * b) + c)"},
		{"a * b ** 2", "a * b ** 2", "(a * (b ** 2))"},
		{"(a * b) ** 2", "(a * b) ** 2", "((a * b) ** 2)"},
		{"-a * b", "-a * b", "((-a) * b)"},
		{"-(a * b)", "-(a * b)", "(-(a * b))"},
		{"-(a + b)", "-(a + b)", "(-(a + b))"},
		{"a - -b", "a - -b", "(a - (-b))"},
		{"a * -b", "a * -b", "(a * (-b))"},
		{"- -a", "--a", "(-(-a))"},
		{"-(-a)", "--a", "(-(-a))"},
		{"-1", "-1", "(-1)"},
		{"(((a)))", "a", "a"},
		{"max(min(a, b), sqrt(abs(-c)))", "max(min(a, b), sqrt(abs(-c)))", "max(min(a, b), sqrt(abs((-c))))"},
		{"max((a + b), (c))", "max(a + b, c)", "max((a + b), c)"},
		{"max(a, b,)", "max(a, b)", "max(a, b)"},
		{"sqrt(x) ** 2", "sqrt(x) ** 2", "(sqrt(x) ** 2)"},
		{"1e-3 * .5 + 1.", "1e-3 * .5 + 1.", "((1e-3 * .5) + 1.)"},
		{"(1 - beta1 ** (t + 1))", "1 - beta1 ** (t + 1)", "(1 - (beta1 ** (t + 1)))"},
	}
	for _, tt := range tests {
		x := parseExpr(t, tt.in)
		if got := shape(x); got != tt.shape {
			t.Errorf("%s parses as %s, want %s", tt.in, got, tt.shape)
		}
		got := dsl.ExprString(x)
		if got != tt.want {
			t.Errorf("ExprString(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if again := shape(parseExpr(t, got)); again != tt.shape {
			t.Errorf("%s reparses as %s, want %s", got, again, tt.shape)
		}
	}
}

// TestExprStringBuilt prints trees that the parser never builds but a
// program could: the printer must still keep their meaning.
func TestExprStringBuilt(t *testing.T) {
	id := func(n string) dsl.Expr { return &dsl.Ident{Name: n} }
	bin := func(x dsl.Expr, op dsl.Token, y dsl.Expr) dsl.Expr { return &dsl.BinaryExpr{X: x, Op: op, Y: y} }
	neg := func(x dsl.Expr) dsl.Expr { return &dsl.UnaryExpr{Op: dsl.SUB, X: x} }
	tests := []struct {
		x    dsl.Expr
		want string
	}{
		{bin(id("a"), dsl.POW, bin(id("b"), dsl.ADD, id("c"))), "a ** (b + c)"},
		{bin(neg(id("a")), dsl.POW, id("b")), "(-a) ** b"},
		{bin(id("a"), dsl.POW, neg(id("b"))), "a ** -b"},
		{neg(bin(id("a"), dsl.MUL, id("b"))), "-(a * b)"},
		{bin(id("a"), dsl.QUO, bin(id("b"), dsl.QUO, id("c"))), "a / (b / c)"},
		{bin(bin(id("a"), dsl.QUO, id("b")), dsl.QUO, id("c")), "a / b / c"},
		{&dsl.BadExpr{}, "BAD"},
	}
	for _, tt := range tests {
		got := dsl.ExprString(tt.x)
		if got != tt.want {
			t.Errorf("ExprString(%s) = %s, want %s", shape(tt.x), got, tt.want)
			continue
		}
		if tt.want != "BAD" && shape(parseExpr(t, got)) != shape(tt.x) {
			t.Errorf("%s reparses as %s, want %s", got, shape(parseExpr(t, got)), shape(tt.x))
		}
	}
}

// randomExpr builds a random expression tree of at most the given depth,
// with shapes the parser never builds, such as -(a) ** b, included.
func randomExpr(r *rand.Rand, depth int) dsl.Expr {
	if depth == 0 || r.IntN(4) == 0 {
		if r.IntN(2) == 0 {
			return &dsl.NumberLit{Lit: []string{"1", "2.5", ".5", "1e-3"}[r.IntN(4)]}
		}
		return &dsl.Ident{Name: []string{"a", "b", "g", "t"}[r.IntN(4)]}
	}
	switch r.IntN(6) {
	case 0:
		return &dsl.UnaryExpr{Op: dsl.SUB, X: randomExpr(r, depth-1)}
	case 1:
		args := []dsl.Expr{randomExpr(r, depth-1), randomExpr(r, depth-1)}
		return &dsl.CallExpr{Fun: &dsl.Ident{Name: "max"}, Args: args}
	}
	op := []dsl.Token{dsl.ADD, dsl.SUB, dsl.MUL, dsl.QUO, dsl.POW}[r.IntN(5)]
	return &dsl.BinaryExpr{X: randomExpr(r, depth-1), Op: op, Y: randomExpr(r, depth-1)}
}

// TestExprStringRandom checks on random trees that ExprString keeps the
// meaning (the printed form parses back to the same tree) with the fewest
// parentheses (removing any pair changes the tree or does not parse).
func TestExprStringRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		x := randomExpr(r, 5)
		s := dsl.ExprString(x)
		if got := shape(parseExpr(t, s)); got != shape(x) {
			t.Fatalf("%s parses as %s, want %s", s, got, shape(x))
		}
		for _, i := range groupingParens(s) {
			j := matchingParen(s, i)
			without := s[:i] + s[i+1:j] + s[j+1:]
			f, errs := dsl.ParseFile("x.dsl", []byte("optimizer x\nstate s = "+without+"\n"))
			if len(errs) == 0 && shape(f.States[0].Init) == shape(x) {
				t.Fatalf("%s: the parentheses at %d are redundant: %s means the same", s, i, without)
			}
		}
	}
}

// groupingParens returns the offsets of the '(' in s that group, not call.
func groupingParens(s string) []int {
	var out []int
	for i := range len(s) {
		if s[i] == '(' && (i == 0 || !isNameByte(s[i-1])) {
			out = append(out, i)
		}
	}
	return out
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func matchingParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// TestParseExpr parses single expressions: ExprString prints them back the
// same, and anything but one expression is an error.
func TestParseExpr(t *testing.T) {
	for _, src := range []string{"sqrt(kappa)", "kappa ** 0.5", "-x", "(1 - beta) ** -(t + 1)", "min(a, b) / 2"} {
		x, err := dsl.ParseExpr(src)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", src, err)
			continue
		}
		if got := dsl.ExprString(x); got != src {
			t.Errorf("ParseExpr(%q) prints as %q", src, got)
		}
	}
	for _, src := range []string{"", "a b", "a = b", "1 +", "f(", "a\nb"} {
		if x, err := dsl.ParseExpr(src); err == nil {
			t.Errorf("ParseExpr(%q) = %s, want an error", src, dsl.ExprString(x))
		}
	}
}
