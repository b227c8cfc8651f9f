package dsl

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// ExprString prints x in DSL syntax with the fewest parentheses that keep
// its meaning; the user's redundant parentheses are dropped.
func ExprString(x Expr) string { return exprText(x).S }

func exprText(x Expr) lang.Text {
	switch x := x.(type) {
	case *NumberLit:
		return lang.Atom(x.Lit)
	case *Ident:
		return lang.Atom(x.Name)
	case *ParenExpr:
		return exprText(x.X)
	case *UnaryExpr:
		return lang.Unary(exprText(x.X))
	case *BinaryExpr:
		return lang.Binary(x.Op.Op(), exprText(x.X), exprText(x.Y))
	case *CallExpr:
		args := make([]lang.Text, len(x.Args))
		for i, a := range x.Args {
			args[i] = exprText(a)
		}
		return lang.Call(x.Fun.Name, args...)
	}
	return lang.Atom("BAD")
}

// Format prints a file in canonical DSL form: one declaration per line, the
// step body indented, comments dropped.
func Format(f *File) []byte {
	var b bytes.Buffer
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *OptimizerDecl:
			fmt.Fprintf(&b, "optimizer %s\n", d.Name.Name)
		case *HyperDecl:
			fmt.Fprintf(&b, "hyper %s = %s", d.Name.Name, ExprString(d.DefaultExpr))
			if d.Range != nil {
				fmt.Fprintf(&b, " in %s", d.Range)
			}
			if d.Alias != nil {
				fmt.Fprintf(&b, " alias %s", d.Alias)
			}
			b.WriteString("\n")
		case *StateDecl:
			fmt.Fprintf(&b, "state %s%s = %s\n", d.Name.Name, d.storage(), ExprString(d.Init))
		case *ScalarDecl:
			fmt.Fprintf(&b, "scalar %s = %s\n", d.Name.Name, ExprString(d.Init))
		case *ObserveDecl:
			fmt.Fprintf(&b, "observe %s(%s)\n", d.Kind.Name, argsString(d.Args))
		case *StepDecl:
			b.WriteString("step {\n")
			if d.HostPos.IsValid() {
				b.WriteString("\thost {\n")
				for _, a := range d.Host {
					fmt.Fprintf(&b, "\t\t%s = %s\n", a.LHS.Name, ExprString(a.RHS))
				}
				b.WriteString("\t}\n")
			}
			for _, a := range d.Body {
				fmt.Fprintf(&b, "\t%s = %s\n", a.LHS.Name, ExprString(a.RHS))
			}
			b.WriteString("}\n")
		case *DiagnosticDecl:
			fmt.Fprintf(&b, "diagnostic %s(%s)\n", d.Kind.Name, identsString(d.Args))
		case *NoiseDecl:
			b.WriteString("noise {\n")
			for _, buf := range d.Buffers {
				fmt.Fprintf(&b, "\tbuffer %s\n", buf.Name.Name)
			}
			for _, a := range d.Body {
				fmt.Fprintf(&b, "\t%s = %s\n", a.LHS.Name, ExprString(a.RHS))
			}
			b.WriteString("}\n")
		}
	}
	return b.Bytes()
}

func argsString(args []*Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Name.Name + " = " + ExprString(a.Value)
	}
	return strings.Join(parts, ", ")
}

func identsString(ids []*Ident) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.Name
	}
	return strings.Join(parts, ", ")
}
