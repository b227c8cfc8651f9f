package dsl

import (
	"bytes"
	"fmt"
	"strings"
)

// Precedence levels of expressions, loosest first.
const (
	precAdd = iota + 1
	precMul
	precUnary
	precPow
	precPrimary
)

func precedence(x Expr) int {
	switch x := x.(type) {
	case *BinaryExpr:
		switch x.Op {
		case ADD, SUB:
			return precAdd
		case MUL, QUO:
			return precMul
		}
		return precPow
	case *UnaryExpr:
		return precUnary
	case *ParenExpr:
		return precedence(x.X)
	}
	return precPrimary
}

// ExprString prints x in DSL syntax with the fewest parentheses that keep
// its meaning; the user's redundant parentheses are dropped.
func ExprString(x Expr) string {
	var b strings.Builder
	writeExpr(&b, x)
	return b.String()
}

func writeExpr(b *strings.Builder, x Expr) {
	switch x := x.(type) {
	case *NumberLit:
		b.WriteString(x.Lit)
	case *Ident:
		b.WriteString(x.Name)
	case *ParenExpr:
		writeExpr(b, x.X)
	case *UnaryExpr:
		b.WriteString("-")
		writeOperand(b, x.X, precedence(x.X) < precUnary)
	case *BinaryExpr:
		writeBinary(b, x)
	case *CallExpr:
		b.WriteString(x.Fun.Name + "(")
		for i, a := range x.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, a)
		}
		b.WriteString(")")
	default:
		b.WriteString("BAD")
	}
}

func writeBinary(b *strings.Builder, x *BinaryExpr) {
	p, pl, pr := precedence(x), precedence(x.X), precedence(x.Y)
	if x.Op == POW {
		writeOperand(b, x.X, pl <= precPow)
		b.WriteString(" ** ")
		writeOperand(b, x.Y, pr < precUnary)
		return
	}
	writeOperand(b, x.X, pl < p)
	b.WriteString(" " + x.Op.String() + " ")
	writeOperand(b, x.Y, pr <= p)
}

func writeOperand(b *strings.Builder, x Expr, parens bool) {
	if parens {
		b.WriteString("(")
	}
	writeExpr(b, x)
	if parens {
		b.WriteString(")")
	}
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
			fmt.Fprintf(&b, "hyper %s = %s", d.Name.Name, d.Default.Lit)
			if d.Range != nil {
				fmt.Fprintf(&b, " in %s", d.Range)
			}
			b.WriteString("\n")
		case *StateDecl:
			fmt.Fprintf(&b, "state %s = %s\n", d.Name.Name, ExprString(d.Init))
		case *ObserveDecl:
			fmt.Fprintf(&b, "observe %s(%s)\n", d.Kind.Name, argsString(d.Args))
		case *StepDecl:
			b.WriteString("step {\n")
			for _, a := range d.Body {
				fmt.Fprintf(&b, "\t%s = %s\n", a.LHS.Name, ExprString(a.RHS))
			}
			b.WriteString("}\n")
		case *DiagnosticDecl:
			fmt.Fprintf(&b, "diagnostic %s(%s)\n", d.Kind.Name, identsString(d.Args))
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
