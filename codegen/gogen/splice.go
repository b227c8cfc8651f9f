package gogen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"
	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/reduce"
	"github.com/fibergen/fibergen/rng"
)

// A spliceSource is a file of one of fibergen's own packages whose
// declarations every generated package carries: the file stays the one
// reference, compiled and tested where it lives, and the generator splices
// its declarations into the generated file when it runs, so there is no
// copy to drift (docs/decisions.md, decision 29).
type spliceSource struct {
	path     string // the file in this module, for errors: "gain/gain.go"
	text     string // its text, which its package embeds
	unexport bool   // rename the names it exports to unexported ones
}

// The files the generator splices. reduce's exported names stay exported:
// they are API of the generated packages (Privatize, SumChunk, Ratio).
var (
	rngCore      = spliceSource{path: "rng/core.go", text: rng.CoreSource}
	rngSecure    = spliceSource{path: "rng/secure.go", text: rng.SecureSource}
	rngDraw      = spliceSource{path: "rng/draw.go", text: rng.DrawSource}
	rngRound     = spliceSource{path: "rng/round.go", text: rng.RoundSource}
	reduceCore   = spliceSource{path: "reduce/core.go", text: reduce.CoreSource}
	reduceFold   = spliceSource{path: "reduce/fold.go", text: reduce.FoldSource}
	gainFile     = spliceSource{path: "gain/gain.go", text: gain.Source, unexport: true}
	hostMathFile = spliceSource{path: "lang/hostmath.go", text: lang.HostMathSource, unexport: true}
	rangeFile    = spliceSource{path: "lang/rangecheck.go", text: lang.RangeCheckSource, unexport: true}
)

// splice adds to the generated file the declarations of src that roots
// name, as src spells them (none: all of its declarations), and those they
// refer to.
func (g *generator) splice(src spliceSource, roots ...string) {
	code, err := spliceCode(src, roots)
	if err != nil {
		g.fail("splicing %s: %v", src.path, err)
		return
	}
	g.file.Add(code)
}

// spliceCode parses src, keeps the declarations roots need with their
// comments, renames them if src.unexport, prints them with go/printer and
// returns the text as jennifer code.
func spliceCode(src spliceSource, roots []string) (jen.Code, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, src.path, src.text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	decls, err := neededDecls(f, roots)
	if err != nil {
		return nil, err
	}
	out := &ast.File{Name: f.Name, Decls: decls}
	out.Comments = ast.NewCommentMap(fset, f, f.Comments).Filter(out).Comments()
	imports := importNames(f)
	if src.unexport {
		if err := unexport(f, out, imports); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8} // gofmt's
	if err := cfg.Fprint(&buf, fset, out); err != nil {
		return nil, err
	}
	return qualify(buf.String(), imports)
}

// importNames maps the name under which f refers to each package it
// imports to the package's path: "big" to "math/big".
func importNames(f *ast.File) map[string]string {
	names := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	return names
}

// neededDecls returns, in source order, the declarations of f that roots
// name and, transitively, those whose names their identifiers use; a type
// brings its methods. Without roots it returns every declaration but the
// imports.
func neededDecls(f *ast.File, roots []string) ([]ast.Decl, error) {
	index := declIndex(f)
	keep := map[ast.Decl]bool{}
	for _, r := range roots {
		if index[r] == nil {
			return nil, fmt.Errorf("it declares no %s", r)
		}
	}
	seen := map[string]bool{}
	for queue := slices.Clone(roots); len(queue) > 0; queue = queue[1:] {
		if seen[queue[0]] {
			continue
		}
		seen[queue[0]] = true
		for _, d := range index[queue[0]] {
			keep[d] = true
			queue = append(queue, usedNames(d, index)...)
		}
	}
	var out []ast.Decl
	for _, d := range f.Decls {
		if keep[d] || len(roots) == 0 && !isImport(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// declIndex maps each name f declares at top level to its declaration (a
// whole const or var block for each of its names), and each type's name to
// its methods as well.
func declIndex(f *ast.File) map[string][]ast.Decl {
	index := map[string][]ast.Decl{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil {
				name = receiverType(d.Recv.List[0].Type)
			}
			index[name] = append(index[name], d)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				for _, name := range specNames(s) {
					index[name] = append(index[name], d)
				}
			}
		}
	}
	return index
}

// specNames are the names a type, const or var spec declares.
func specNames(s ast.Spec) []string {
	var names []string
	switch s := s.(type) {
	case *ast.TypeSpec:
		names = append(names, s.Name.Name)
	case *ast.ValueSpec:
		for _, n := range s.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

// receiverType is the name of a method's receiver type: T for T, *T, T[P].
func receiverType(x ast.Expr) string {
	for {
		switch t := x.(type) {
		case *ast.StarExpr:
			x = t.X
		case *ast.IndexExpr:
			x = t.X
		case *ast.IndexListExpr:
			x = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// usedNames lists the identifiers in d that are names in index. A local
// or a field that shares a top-level name brings that declaration too,
// which costs an unused declaration, never a missing one.
func usedNames(d ast.Decl, index map[string][]ast.Decl) []string {
	var names []string
	ast.Inspect(d, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && index[id.Name] != nil {
			names = append(names, id.Name)
		}
		return true
	})
	return names
}

func isImport(d ast.Decl) bool {
	g, ok := d.(*ast.GenDecl)
	return ok && g.Tok == token.IMPORT
}

// unexport renames, in out, each exported name that f declares (at top
// level, as a method or as a struct field) to the name with its first
// letter lowered, SteadyGain to steadyGain and At to at, by rewriting the
// *ast.Ident nodes that spell it, and the same words in out's comments, so
// that a doc comment still begins with the name it documents. Selectors of
// package references (big.Rat) are not the file's names and stay. The file
// must not call an imported type's method or field by one of its own
// exported names: that would be renamed too, and not compile.
func unexport(f, out *ast.File, imports map[string]string) error {
	renames, err := unexportedNames(f)
	if err != nil {
		return err
	}
	ast.Inspect(out, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			return !isPackageRef(n, imports)
		case *ast.Ident:
			if to, ok := renames[n.Name]; ok {
				n.Name = to
			}
		}
		return true
	})
	for _, cg := range out.Comments {
		for _, c := range cg.List {
			c.Text = renameWords(c.Text, renames)
		}
	}
	return nil
}

// unexportedNames maps each exported name f declares to its unexported
// form; an error if that form is an identifier of f already, which the
// rename would capture or collide with.
func unexportedNames(f *ast.File) (map[string]string, error) {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	renames := map[string]string{}
	for _, name := range declaredNames(f) {
		if !ast.IsExported(name) {
			continue
		}
		to := unexported(name)
		if used[to] {
			return nil, fmt.Errorf("cannot rename %s to %s, which it uses already", name, to)
		}
		renames[name] = to
	}
	return renames, nil
}

// unexported is name with its first letter lower case: what a spliced
// file's exported name becomes in the generated file.
func unexported(name string) string {
	r, size := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[size:]
}

// declaredNames lists the names of f's functions, methods, types, consts,
// vars and struct fields.
func declaredNames(f *ast.File) []string {
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			names = append(names, n.Name.Name)
		case *ast.TypeSpec, *ast.ValueSpec:
			names = append(names, specNames(n.(ast.Spec))...)
		case *ast.StructType:
			for _, field := range n.Fields.List {
				for _, id := range field.Names {
					names = append(names, id.Name)
				}
			}
		}
		return true
	})
	return names
}

// renameWords replaces the words (runs of letters, digits and _) of a
// comment that renames maps.
func renameWords(text string, renames map[string]string) string {
	var b strings.Builder
	for text != "" {
		n := strings.IndexFunc(text, func(r rune) bool { return !isWordRune(r) })
		if n < 0 {
			n = len(text)
		}
		word := text[:n]
		if n == 0 {
			_, n = utf8.DecodeRuneInString(text)
			word = text[:n]
		} else if to, ok := renames[word]; ok {
			word = to
		}
		b.WriteString(word)
		text = text[n:]
	}
	return b.String()
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// isPackageRef says whether sel is a reference to an imported package,
// like big.Rat. The spliced files do not shadow their imports.
func isPackageRef(sel *ast.SelectorExpr, imports map[string]string) bool {
	x, ok := sel.X.(*ast.Ident)
	return ok && imports[x.Name] != ""
}

// qualify turns a file printed by go/printer into jennifer code for the
// declarations after its package clause. Jennifer writes a generated file's
// imports from the package references it renders itself, so the text goes
// in verbatim (jen.Op) except for those references, found by parsing the
// text again, which become jen.Qual: jennifer then imports math and
// math/big, and names them as it names them for the rest of the file.
// (Jennifer separates the pieces with spaces, which gofmt removes.)
func qualify(text string, imports map[string]string) (jen.Code, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "spliced.go", text, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var refs []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isPackageRef(sel, imports) {
			refs = append(refs, sel)
			return false
		}
		return true
	})
	slices.SortFunc(refs, func(a, b *ast.SelectorExpr) int { return int(a.Pos() - b.Pos()) })
	tf := fset.File(f.Pos())
	var s jen.Statement
	last := tf.Offset(f.Name.End())
	for _, sel := range refs {
		s = append(s, jen.Op(text[last:tf.Offset(sel.Pos())]), jen.Qual(imports[sel.X.(*ast.Ident).Name], sel.Sel.Name))
		last = tf.Offset(sel.End())
	}
	s = append(s, jen.Op(text[last:]))
	return &s, nil
}
