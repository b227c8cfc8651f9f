package dsl

import "strconv"

// Token is a lexical token of the DSL.
type Token int

// The tokens of the DSL.
const (
	ILLEGAL Token = iota
	EOF
	SEMI // ';' or an inserted newline

	IDENT  // lr
	NUMBER // 1e-3

	ADD    // +
	SUB    // -
	MUL    // *
	QUO    // /
	POW    // **
	LSS    // <
	LEQ    // <=
	GTR    // >
	GEQ    // >=
	EQL    // ==
	NEQ    // !=
	ASSIGN // =
	COMMA  // ,
	COLON  // :
	LPAREN // (
	RPAREN // )
	LBRACK // [
	RBRACK // ]
	LBRACE // {
	RBRACE // }

	keywordBeg
	OPTIMIZER  // optimizer
	HYPER      // hyper
	STATE      // state
	SCALAR     // scalar
	HOST       // host
	OBSERVE    // observe
	STEP       // step
	DIAGNOSTIC // diagnostic
	IN         // in
	ALIAS      // alias
	INF        // inf
	keywordEnd
)

var tokens = [...]string{
	ILLEGAL: "ILLEGAL", EOF: "end of file", SEMI: "newline or ;",
	IDENT: "name", NUMBER: "number",
	ADD: "+", SUB: "-", MUL: "*", QUO: "/", POW: "**", ASSIGN: "=", COMMA: ",", COLON: ":",
	LSS: "<", LEQ: "<=", GTR: ">", GEQ: ">=", EQL: "==", NEQ: "!=",
	LPAREN: "(", RPAREN: ")", LBRACK: "[", RBRACK: "]", LBRACE: "{", RBRACE: "}",
	OPTIMIZER: "optimizer", HYPER: "hyper", STATE: "state", SCALAR: "scalar", HOST: "host", OBSERVE: "observe",
	STEP: "step", DIAGNOSTIC: "diagnostic", IN: "in", ALIAS: "alias", INF: "inf",
}

// String returns the token's spelling, or a description for classes of tokens.
func (t Token) String() string {
	if t >= 0 && int(t) < len(tokens) && tokens[t] != "" {
		return tokens[t]
	}
	return "token(" + strconv.Itoa(int(t)) + ")"
}

var keywords = map[string]Token{}

func init() {
	for t := keywordBeg + 1; t < keywordEnd; t++ {
		keywords[tokens[t]] = t
	}
}

// Lookup maps an identifier to its keyword token, or IDENT.
func Lookup(name string) Token {
	if t, ok := keywords[name]; ok {
		return t
	}
	return IDENT
}

// IsKeyword reports whether name is a reserved word of the DSL.
func IsKeyword(name string) bool { return Lookup(name) != IDENT }

// Pos is a position in a source file. Line and Column are 1-based; Column
// counts bytes, as in go/token.
type Pos struct {
	Filename string
	Offset   int
	Line     int
	Column   int
}

// IsValid reports whether the position is known.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String formats the position as file:line:col.
func (p Pos) String() string {
	s := p.Filename
	if !p.IsValid() {
		if s == "" {
			return "-"
		}
		return s
	}
	if s != "" {
		s += ":"
	}
	return s + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
}

// Before reports whether p comes before q in the same file.
func (p Pos) Before(q Pos) bool {
	if p.Filename != q.Filename {
		return p.Filename < q.Filename
	}
	return p.Offset < q.Offset
}

// LineCol formats the position as line:col, for references within a file.
func (p Pos) LineCol() string { return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column) }
