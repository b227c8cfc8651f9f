package gogen_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/fibergen/fibergen/codegen/gogen"
	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
)

// emaDSL has a filter whose attenuation fibergen solves in closed form: its
// package needs gain's stability check alone (FeedingRadius and what it calls).
const emaDSL = `optimizer ema
hyper beta = 0.9 in (0, 1)
state m = 0
step {
	m = beta * m + (1 - beta) * g
	theta = theta - 0.1 * m / sqrt(attenuation(m) * sigma_w2 + 1)
}
`

// TestSplicedDeclarationsMatchSources checks that the declarations of
// rng/core.go, reduce/core.go, gain/gain.go and lang/rangecheck.go in
// generated code are, as go/printer prints them with their comments, those
// of the source files,
// after gain's exported names are lowered (done here on the source text,
// independently of the generator's rewrite of the syntax tree). Any drift
// between a generated package and the packages it splices fails, and so
// does a gain declaration the package does not need.
func TestSplicedDeclarationsMatchSources(t *testing.T) {
	for _, c := range []struct {
		name string
		code func(t *testing.T) []byte
		gain []string // gain's declarations the code must carry, as it names them; nil: all
	}{
		{"no filter", dslCode("sgd.dsl", "optimizer sgd\nhyper lr = 0.1\nstep {\n\ttheta = theta - lr * g\n}\n"), []string{}},
		{"bounded filters only (the states' recursions)", fileCode("testdata/ops.dsl"), []string{"feedingRadius", "feeding", "restrict", "spectralRadius", "squareMatrix"}},
		{"closed-form attenuation", dslCode("ema.dsl", emaDSL), []string{"feedingRadius", "feeding", "restrict", "spectralRadius", "squareMatrix"}},
		{"numeric and finite-time attenuation", fileCode("testdata/gains.dsl"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			generated := printedDecls(t, "generated.go", string(c.code(t)))
			checkSpliced(t, generated, rng.CoreSource, nil)
			checkSpliced(t, generated, reduce.CoreSource, nil)
			checkSpliced(t, generated, lowerExported(t, gain.Source), c.gain)
			checkSpliced(t, generated, lowerExported(t, lang.RangeCheckSource), nil)
		})
	}
}

// fileCode generates the code of a testdata file.
func fileCode(path string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		code, err := generate(t, path)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
}

// dslCode generates the code of DSL source src.
func dslCode(name, src string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		fn, errs, err := irtest.Compile(name, []byte(src))
		if len(errs) > 0 || err != nil {
			t.Fatal(errs, err)
		}
		code, err := gogen.Generate(fn.Func, gogen.Options{Source: name, DSL: []byte(src)})
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
}

// checkSpliced checks that generated has the declarations of the source
// text src named in want (nil: all of them) exactly as src has them, and
// none of src's other declarations.
func checkSpliced(t *testing.T, generated map[string]string, src string, want []string) {
	t.Helper()
	for name, decl := range printedDecls(t, "source.go", src) {
		got, ok := generated[name]
		switch {
		case want != nil && !slices.Contains(want, name):
			if ok {
				t.Errorf("the generated code has %s, which it does not use", name)
			}
		case !ok:
			t.Errorf("the generated code lacks %s", name)
		case got != decl:
			t.Errorf("%s differs from its source:\n%s\nsource:\n%s", name, got, decl)
		}
	}
}

// printedDecls maps the name of each top-level declaration in src but the
// imports (a method's as Type.method, a const block's by its first name)
// to the declaration as go/printer prints it, with its comments.
func printedDecls(t *testing.T, filename, src string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string]string{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		var buf bytes.Buffer
		if err := printer.Fprint(&buf, fset, &printer.CommentedNode{Node: d, Comments: f.Comments}); err != nil {
			t.Fatal(err)
		}
		decls[declName(d)] = buf.String()
	}
	return decls
}

// declName names a top-level declaration for printedDecls.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return d.Name.Name
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		return recv.(*ast.Ident).Name + "." + d.Name.Name
	case *ast.GenDecl:
		switch s := d.Specs[0].(type) {
		case *ast.TypeSpec:
			return s.Name.Name
		case *ast.ValueSpec:
			return s.Names[0].Name
		}
	}
	return ""
}

// lowerExported lowers the first letter of each exported function, method
// and type that src declares, wherever the word occurs in src.
func lowerExported(t *testing.T, src string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "source.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			names = append(names, n.Name.Name)
		case *ast.TypeSpec:
			names = append(names, n.Name.Name)
		}
		return true
	})
	names = slices.DeleteFunc(names, func(s string) bool { return !ast.IsExported(s) })
	words := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
	return words.ReplaceAllStringFunc(src, func(w string) string {
		r, n := utf8.DecodeRuneInString(w)
		return string(unicode.ToLower(r)) + w[n:]
	})
}

// TestSplicedSourcesImportOnlyMath checks that the files the generator
// splices import nothing but math and math/big: the generated packages
// stay self-contained (docs/decisions.md, decision 14).
func TestSplicedSourcesImportOnlyMath(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"rng/core.go", rng.CoreSource},
		{"reduce/core.go", reduce.CoreSource},
		{"gain/gain.go", gain.Source},
		{"lang/rangecheck.go", lang.RangeCheckSource},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), c.name, c.src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != "math" && p != "math/big" {
				t.Errorf("%s imports %q; the files the generator splices import only math and math/big", c.name, p)
			}
		}
	}
}
