// Command genpy writes python/fibergen/_abi.py, what the PyTorch binding
// knows of the C ABI, from the sources it is defined in: the ABI version
// and the statuses from the #defines of capi's cgo preamble (which cgo
// copies into libfibergen.h), the buffers' positions from package ir
// (ir/abi.go), and every exported function's ctypes signature from its Go
// declaration in capi/. The binding then holds no layout constant, status
// or signature of its own; make generate-check keeps the file current, and
// python/tests/test_abi.py compares it with the header cgo writes.
//
//	go run ./capi/internal/genpy [-capi capi] [-o python/fibergen/_abi.py]
//
// (-o - writes to standard output.) capi/capi.go runs it with go generate.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/ir"
)

func main() {
	dir := flag.String("capi", "capi", "the directory of package capi")
	out := flag.String("o", filepath.Join("python", "fibergen", "_abi.py"), "the file to write; - for standard output")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genpy:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	a, err := parseABI(dir)
	if err != nil {
		return err
	}
	src := a.python()
	if out == "-" {
		_, err = os.Stdout.Write(src)
		return err
	}
	return fileout.Write(out, 0o644, func(w io.Writer) error { // whole or not at all
		_, err := w.Write(src)
		return err
	})
}

// abi is what capi's sources say of the C ABI.
type abi struct {
	defines []define // FG_* of the cgo preamble, in order
	funcs   []cfunc  // the exported functions, by name
}

type define struct {
	name  string // without FG_
	value int
}

// cfunc is an exported function's ctypes signature.
type cfunc struct {
	name    string
	restype string   // "None" for none
	args    []string // ctypes type expressions
}

// defineRE matches a #define of the preamble.
var defineRE = regexp.MustCompile(`(?m)^#define FG_([A-Z_]+) (\d+)$`)

// parseABI reads the non-test Go files of package capi in dir.
func parseABI(dir string) (*abi, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	pkg, ok := pkgs["main"]
	if !ok {
		return nil, fmt.Errorf("%s holds no package main (capi)", dir)
	}
	a := &abi{}
	for _, name := range slices.Sorted(maps.Keys(pkg.Files)) {
		f := pkg.Files[name]
		a.defines = append(a.defines, preambleDefines(f)...)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := exportName(fd)
			if name == "" {
				continue
			}
			fn, err := signature(fd, name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", fset.Position(fd.Pos()), err)
			}
			a.funcs = append(a.funcs, fn)
		}
	}
	slices.SortFunc(a.funcs, func(x, y cfunc) int { return strings.Compare(x.name, y.name) })
	if len(a.funcs) == 0 || !slices.ContainsFunc(a.defines, func(d define) bool { return d.name == "ABI_VERSION" }) {
		return nil, fmt.Errorf("%s: no exported functions or no #define FG_ABI_VERSION in its cgo preamble", dir)
	}
	return a, nil
}

// preambleDefines are the FG_* #defines of f's cgo preamble, the comment
// on its import "C".
func preambleDefines(f *ast.File) []define {
	var out []define
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT || g.Doc == nil || len(g.Specs) != 1 || g.Specs[0].(*ast.ImportSpec).Path.Value != `"C"` {
			continue
		}
		for _, m := range defineRE.FindAllStringSubmatch(g.Doc.Text(), -1) {
			v, _ := strconv.Atoi(m[2])
			out = append(out, define{m[1], v})
		}
	}
	return out
}

// exportName is the name of fd's //export line, or "".
func exportName(fd *ast.FuncDecl) string {
	if fd.Doc == nil {
		return ""
	}
	for _, c := range fd.Doc.List {
		if name, ok := strings.CutPrefix(c.Text, "//export "); ok {
			return strings.TrimSpace(name)
		}
	}
	return ""
}

// signature is fd's ctypes signature; name is its //export line's.
func signature(fd *ast.FuncDecl, name string) (cfunc, error) {
	fn := cfunc{name: name, restype: "None"}
	if fn.name != fd.Name.Name {
		return fn, fmt.Errorf("//export %s on func %s", fn.name, fd.Name.Name)
	}
	for _, p := range fd.Type.Params.List {
		t, err := ctype(p.Type)
		if err != nil {
			return fn, fmt.Errorf("%s: %w", fn.name, err)
		}
		for range max(len(p.Names), 1) {
			fn.args = append(fn.args, t)
		}
	}
	if r := fd.Type.Results; r != nil {
		if len(r.List) != 1 || len(r.List[0].Names) > 1 {
			return fn, fmt.Errorf("%s: returns more than one value", fn.name)
		}
		t, err := ctype(r.List[0].Type)
		if err != nil {
			return fn, fmt.Errorf("%s: %w", fn.name, err)
		}
		fn.restype = t
	}
	return fn, nil
}

// scalars are the ctypes of cgo's scalar types.
var scalars = map[string]string{
	"C.int": "c_int", "C.int64_t": "c_int64", "C.uint64_t": "c_uint64", "C.size_t": "c_size_t",
	"C.double": "c_double", "C.float": "c_float", "C.char": "c_char", "unsafe.Pointer": "c_void_p",
}

// ctype is the ctypes type of a parameter's Go type: a C string (*C.char)
// is c_char_p; a pointer to one (a string the library returns, which the
// caller frees with fg_free) or to an unsafe.Pointer is POINTER(c_void_p),
// so that the address survives; other pointers are POINTER of their
// element.
func ctype(e ast.Expr) (string, error) {
	switch t := e.(type) {
	case *ast.SelectorExpr:
		name := fmt.Sprintf("%s.%s", t.X, t.Sel.Name)
		if c, ok := scalars[name]; ok {
			return c, nil
		}
		return "", fmt.Errorf("type %s has no ctypes twin here", name)
	case *ast.StarExpr:
		elem, err := ctype(t.X)
		switch {
		case err != nil:
			return "", err
		case elem == "c_char":
			return "c_char_p", nil
		case elem == "c_char_p" || elem == "c_void_p":
			return "POINTER(c_void_p)", nil
		}
		return "POINTER(" + elem + ")", nil
	}
	return "", errors.New("a parameter type that is not C's")
}

// python is the text of _abi.py.
func (a *abi) python() []byte {
	var b bytes.Buffer
	b.WriteString(`# Code generated by go run ./capi/internal/genpy; DO NOT EDIT.
"""The C ABI of libfibergen.so as capi/ defines it: the version, the
statuses, the kernels' buffer positions (ir/abi.go) and every exported
function's ctypes signature. make generate-check keeps it current;
python/tests/test_abi.py compares it with libfibergen.h."""

`)
	fmt.Fprintf(&b, "from ctypes import %s\n\n", strings.Join(a.ctypesUsed(), ", "))
	b.WriteString("# The #defines of libfibergen.h (FG_*): the ABI version and the statuses.\n")
	for _, d := range a.defines {
		fmt.Fprintf(&b, "%s = %d\n", d.name, d.value)
	}
	fmt.Fprintf(&b, `
# The buffers' positions (ir/abi.go): %[1]s, %[2]s, then the states in
# their order of declaration.
THETA_BUFFER = %[3]d
GRAD_BUFFER = %[4]d
FIRST_STATE = %[5]d
THETA_NAME = %[1]q
GRAD_NAME = %[2]q
# σ_w's position among the host scalars as a Python index: the last.
SIGMA_W_SCALAR = %[6]d

# Every exported function: name -> (restype, argtypes).
SIGNATURES = {
`, ir.ThetaName, ir.GradName, ir.ThetaBuffer, ir.GradBuffer, ir.FirstState, ir.SigmaWScalar(0))
	for _, f := range a.funcs {
		args := strings.Join(f.args, ", ")
		if len(f.args) == 1 {
			args += ","
		}
		fmt.Fprintf(&b, "    %q: (%s, (%s)),\n", f.name, f.restype, args)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// wordRE matches a name in a ctypes type expression.
var wordRE = regexp.MustCompile(`\w+`)

// ctypesUsed are the ctypes names the signatures use, sorted.
func (a *abi) ctypesUsed() []string {
	set := map[string]bool{}
	for _, f := range a.funcs {
		for _, t := range append([]string{f.restype}, f.args...) {
			for _, w := range wordRE.FindAllString(t, -1) {
				if w != "None" {
					set[w] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
