package lang

import (
	"math"
	"unicode"
)

// Op is an arithmetic operation of the language.
type Op uint8

// The operations. The comparisons (Eq, Lt, Le, Gt, Ge, Ne) yield 1 or 0;
// the DSL writes them only as the condition of select.
const (
	Neg Op = iota + 1 // -x
	Add
	Sub
	Mul
	Div
	Pow
	Sqrt
	Abs
	Min
	Max
	Eq     // 1 where x == y (IEEE: NaN equals nothing, -0 == +0), else 0
	Sign   // 1 where x > 0, -1 where x < 0, else x itself (±0, NaN)
	Exp    // e**x, per-step uniform values only (HostExp)
	Log    // natural logarithm, per-step uniform values only (HostLog)
	Sin    // sine, per-step uniform values only (HostSin)
	Cos    // cosine, per-step uniform values only (HostCos)
	Lt     // 1 where x < y, else 0 (IEEE: 0 if either is NaN)
	Le     // 1 where x <= y, else 0
	Gt     // 1 where x > y, else 0
	Ge     // 1 where x >= y, else 0
	Ne     // 1 where x != y (1 if either is NaN), else 0
	Select // select(c, x, y): x where c != 0, else y (SelectOf)
)

// LastOp is the last operation: the operations are Neg through LastOp.
const LastOp = Select

// opInfo is what the language knows of one operation besides what it
// computes (Eval64, Eval32).
type opInfo struct {
	spelling string // as the DSL writes it: an operator or a function's name
	name     string // as the IR's dumps and JSON name it
	arity    int    // its number of operands
}

// ops is the table of the operations: package ir numbers its arithmetic
// operations as these (ir.Op(lang.Add) is ir.OpAdd) and takes their names
// and arities from here, so each fact is written once.
var ops = [...]opInfo{
	Neg: {"-", "neg", 1}, Add: {"+", "add", 2}, Sub: {"-", "sub", 2}, Mul: {"*", "mul", 2},
	Div: {"/", "div", 2}, Pow: {"**", "pow", 2}, Sqrt: {"sqrt", "sqrt", 1}, Abs: {"abs", "abs", 1},
	Min: {"min", "min", 2}, Max: {"max", "max", 2}, Eq: {"==", "eq", 2}, Sign: {"sign", "sign", 1},
	Exp: {"exp", "exp", 1}, Log: {"log", "log", 1}, Sin: {"sin", "sin", 1}, Cos: {"cos", "cos", 1},
	Lt: {"<", "lt", 2}, Le: {"<=", "le", 2}, Gt: {">", "gt", 2}, Ge: {">=", "ge", 2}, Ne: {"!=", "ne", 2},
	Select: {"select", "select", 3},
}

// Valid reports whether o is one of the operations.
func (o Op) Valid() bool { return o >= Neg && o <= LastOp }

// String is the operation as the DSL writes it: an operator or a
// function's name.
func (o Op) String() string {
	if !o.Valid() {
		return "op?"
	}
	return ops[o].spelling
}

// Name is the operation's name in the IR's dumps and JSON: "add", "sqrt".
func (o Op) Name() string {
	if !o.Valid() {
		return "op?"
	}
	return ops[o].name
}

// Calls are the built-in functions that are operations, by name: the
// operations the DSL spells with a name (ops) rather than an operator.
var Calls = calls()

func calls() map[string]Op {
	out := map[string]Op{}
	for o, d := range ops {
		if d.spelling != "" && unicode.IsLetter(rune(d.spelling[0])) {
			out[d.spelling] = Op(o)
		}
	}
	return out
}

// Arity is the number of operands of o; 0 for an invalid one.
func (o Op) Arity() int {
	if !o.Valid() {
		return 0
	}
	return ops[o].arity
}

// IsComparison reports whether o is a comparison, which yields 1 or 0.
func (o Op) IsComparison() bool { return o == Eq || o >= Lt && o <= Ne }

// EvalN computes o on float64 operands, select included.
func EvalN(o Op, args ...float64) float64 {
	if o == Select {
		return SelectOf(args[0], args[1], args[2])
	}
	y := math.NaN()
	if len(args) > 1 {
		y = args[1]
	}
	return Eval64(o, args[0], y)
}

// HostOnly reports whether o exists only on per-step uniform values, which
// the host computes in float64: the kernels have no float32 form of it.
// (Pow too has none, but a per-coordinate x ** n with a constant integer n
// is expanded into products.)
func (o Op) HostOnly() bool { return o == Exp || o == Log || o == Sin || o == Cos }

// Eval64 computes o on the host's float64 values (hypers, t, sigma_w2 and
// what is computed from them); y is ignored by a unary operation. Constant
// folding, the interpreter and the generated Go code all compute exactly
// this.
func Eval64(o Op, x, y float64) float64 {
	switch o {
	case Pow:
		return math.Pow(x, y)
	case Sqrt:
		return math.Sqrt(x)
	case Abs:
		return math.Abs(x)
	case Exp:
		return HostExp(x)
	case Log:
		return HostLog(x)
	case Sin:
		return HostSin(x)
	case Cos:
		return HostCos(x)
	}
	return eval(o, x, y)
}

// Eval32 computes o in the kernels' IEEE float32 arithmetic: every result
// rounded to float32, sqrt correctly rounded. Pow has no float32 form (the
// compiler expands a per-coordinate power into products), nor has a
// HostOnly operation: NaN.
func Eval32(o Op, x, y float32) float32 {
	switch {
	case o == Pow || o.HostOnly():
		return float32(math.NaN())
	case o == Sqrt:
		return float32(math.Sqrt(float64(x)))
	case o == Abs:
		return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	}
	return eval(o, x, y)
}

// eval computes the operations whose Go expression is the same for both
// widths; Go rounds each to the operands' type.
func eval[T ~float32 | ~float64](o Op, x, y T) T {
	switch o {
	case Neg:
		return -x
	case Add:
		return x + y
	case Sub:
		return x - y
	case Mul:
		return x * y
	case Div:
		return x / y
	case Min:
		return MinOf(x, y)
	case Max:
		return MaxOf(x, y)
	case Eq:
		return oneIf[T](x == y)
	case Lt:
		return oneIf[T](x < y)
	case Le:
		return oneIf[T](x <= y)
	case Gt:
		return oneIf[T](x > y)
	case Ge:
		return oneIf[T](x >= y)
	case Ne:
		return oneIf[T](x != y)
	case Sign:
		return SignOf(x)
	}
	return T(math.NaN())
}

// oneIf is 1 if b, else 0.
func oneIf[T ~float32 | ~float64](b bool) T {
	if b {
		return 1
	}
	return 0
}

// SelectOf is the DSL's select: x where c != 0 (so 1, or NaN), else y. It
// only selects, so every target gives the same bits, NaN payloads too.
func SelectOf[T ~float32 | ~float64](c, x, y T) T {
	if c != 0 {
		return x
	}
	return y
}

// MaxOf is the DSL's max: NaN if x is NaN, else y if y is NaN or y >= x,
// else x — so max(-0, 0) is 0 and max(0, -0) is -0. Every target
// implements exactly this selection.
func MaxOf[T ~float32 | ~float64](x, y T) T {
	if x != x {
		return x
	}
	if y != y || y >= x {
		return y
	}
	return x
}

// SignOf is the DSL's sign: 1 if x > 0, -1 if x < 0, else x (so ±0 keep
// their sign and NaN stays NaN). Every target implements exactly this
// selection, so it is exact everywhere.
func SignOf[T ~float32 | ~float64](x T) T {
	if x > 0 {
		return 1
	}
	if x < 0 {
		return -1
	}
	return x
}

// MinOf is the DSL's min, the mirror image of MaxOf.
func MinOf[T ~float32 | ~float64](x, y T) T {
	if x != x {
		return x
	}
	if y != y || y <= x {
		return y
	}
	return x
}
