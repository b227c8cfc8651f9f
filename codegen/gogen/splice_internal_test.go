package gogen

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
)

// spliceTestSource is a source file for TestSpliceCode: an unused
// function, a function with a helper, a type with a constructor and a
// method, and math/big under another name.
const spliceTestSource = `package src

import (
	"math"
	mb "math/big"
)

// Unused is needed by nothing.
func Unused() {}

// Twice returns 2|x| through helper.
func Twice(x float64) float64 { return 2 * helper(x) }

func helper(x float64) float64 { return math.Abs(x) }

// Acc is a sum; Acc.Add adds to it.
type Acc struct{ Sum *mb.Rat }

// NewAcc returns a zero Acc.
func NewAcc() *Acc { return &Acc{Sum: new(mb.Rat)} }

// Add adds x.
func (a *Acc) Add(x float64) { a.Sum.Mul(a.Sum, new(mb.Rat).SetFloat64(x)) }
`

// TestSpliceCode checks what spliceCode keeps, how it renames and how the
// package references come out, on the code as jennifer renders it.
func TestSpliceCode(t *testing.T) {
	for _, c := range []struct {
		name       string
		src        spliceSource
		roots      []string
		want, lack []string
	}{
		{"a function and its helper", spliceSource{"src.go", spliceTestSource, true}, []string{"Twice"},
			[]string{"// twice returns 2|x| through helper.", "func twice(", "func helper(", "math.Abs(x)", "import \"math\"\n"},
			[]string{"nused", "cc", "big"}},
		{"a type brings its methods", spliceSource{"src.go", spliceTestSource, true}, []string{"NewAcc"},
			[]string{"type acc struct", "sum *big.Rat", "func newAcc() *acc", "&acc{sum: new(big.Rat)}", "func (a *acc) add(",
				"a.sum.Mul(a.sum, new(big.Rat).SetFloat64(x))", "// acc is a sum; acc.add adds to it.", "import \"math/big\"\n"},
			[]string{"wice", "nused", " Acc", "*Acc", "mb.", "\"math\"\n"}},
		{"everything, unrenamed", spliceSource{"src.go", spliceTestSource, false}, nil,
			[]string{"func Unused()", "func Twice(", "func helper(", "type Acc struct", "func (a *Acc) Add(", "\"math\"\n", "\"math/big\"\n"},
			[]string{"package src", "mb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := renderSpliced(t, c.src, c.roots)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("the spliced code lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.lack {
				if strings.Contains(got, w) {
					t.Errorf("the spliced code has %q:\n%s", w, got)
				}
			}
		})
	}
}

// renderSpliced renders the code spliceCode returns as a file of package p.
func renderSpliced(t *testing.T, src spliceSource, roots []string) string {
	t.Helper()
	code, err := spliceCode(src, roots)
	if err != nil {
		t.Fatal(err)
	}
	f := jen.NewFile("p")
	f.Add(code)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestSpliceCodeErrors checks that spliceCode refuses a root the file does
// not declare and a rename that would collide with a name in use.
func TestSpliceCodeErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		roots     []string
		err       string
	}{
		{"unknown root", spliceTestSource, []string{"Thrice"}, "declares no Thrice"},
		{"rename collision", "package src\n\nfunc F() int { return f() }\n\nfunc f() int { return 1 }\n", []string{"F"}, "cannot rename F to f"},
		{"not Go", "package src\n\nfunc {", nil, "expected"},
	} {
		_, err := spliceCode(spliceSource{"src.go", c.src, true}, c.roots)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: got error %v, want one with %q", c.name, err, c.err)
		}
	}
}
