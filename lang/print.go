package lang

// Prec is how tightly an expression binds, loosest first.
type Prec int

// The precedence levels of the DSL.
const (
	PrecCmp     Prec = iota + 1 // x < y and the other comparisons, which do not chain
	PrecAdd                     // x + y, x - y
	PrecMul                     // x * y, x / y
	PrecUnary                   // -x
	PrecPow                     // x ** y, right-associative
	PrecPrimary                 // numbers, names, calls, parenthesized expressions
)

// Prec is the precedence of the binary operator o.
func (o Op) Prec() Prec {
	switch o {
	case Add, Sub:
		return PrecAdd
	case Mul, Div:
		return PrecMul
	}
	if o.IsComparison() {
		return PrecCmp
	}
	return PrecPow
}

// Text is an expression printed in DSL syntax and how tightly it binds. The
// printers of the DSL's syntax tree (dsl.ExprString) and of the IR's values
// (ir.ExprString) both build their text from Atom, Unary, Binary and Call,
// which put in the fewest parentheses that keep the meaning.
type Text struct {
	S    string
	Prec Prec
}

// Atom is a number or a name.
func Atom(s string) Text { return Text{s, PrecPrimary} }

// Unary is -x.
func Unary(x Text) Text { return Text{"-" + x.paren(x.Prec < PrecUnary), PrecUnary} }

// Binary is x o y.
func Binary(o Op, x, y Text) Text {
	p := o.Prec()
	if o == Pow {
		return Text{x.paren(x.Prec <= PrecPow) + " ** " + y.paren(y.Prec < PrecUnary), p}
	}
	return Text{x.paren(x.Prec < p) + " " + o.String() + " " + y.paren(y.Prec <= p), p}
}

// Call is name(args...).
func Call(name string, args ...Text) Text {
	s := name + "("
	for i, a := range args {
		if i > 0 {
			s += ", "
		}
		s += a.S
	}
	return Atom(s + ")")
}

func (x Text) paren(yes bool) string {
	if yes {
		return "(" + x.S + ")"
	}
	return x.S
}
