package dsl

import (
	"math"
	"strconv"

	"github.com/fibergen/fibergen/lang"
)

// maxDepth bounds expression nesting so that no input can exhaust the stack.
const maxDepth = 200

// The limits of a .dsl file (docs/dsl.md, "Limits"): each keeps checking
// and building it within seconds and a few hundred MB.
const (
	// MaxSourceBytes bounds the file.
	MaxSourceBytes = 1 << 20
	// MaxStates bounds the states: each is a parameter of the kernels,
	// whose parameters CUDA limits to 4 KiB.
	MaxStates = 256
	// MaxStatements bounds the statements of step.
	MaxStatements = 1024
)

// ParseFile parses the source of one .dsl file. It always returns a *File,
// possibly partial; the ErrorList (normalized) says what was wrong.
func ParseFile(filename string, src []byte) (*File, ErrorList) {
	f, errs := parse(filename, src)
	errs.Normalize()
	return f, errs
}

// ParseExpr parses one expression, such as ir.ExprString prints, checking
// its syntax only.
func ParseExpr(src string) (Expr, error) {
	p := &parser{f: &File{Filename: "expression", Src: []byte(src)}}
	p.s = newScanner("expression", []byte(src), &p.errs)
	p.next()
	x := p.parseExpr()
	if p.tok == SEMI { // the newline the scanner adds at the end
		p.next()
	}
	if p.tok != EOF {
		p.errorExpected("the end of the expression")
	}
	p.errs.Normalize()
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return x, nil
}

// parse is ParseFile without the normalization of the errors.
func parse(filename string, src []byte) (*File, ErrorList) {
	p := &parser{f: &File{Filename: filename, Src: src}}
	if len(src) > MaxSourceBytes {
		p.errs.Addf(Pos{Filename: filename, Line: 1, Column: 1}, "the file is %d bytes; fibergen reads at most %d (1 MiB)", len(src), MaxSourceBytes)
		return p.f, p.errs
	}
	p.s = newScanner(filename, src, &p.errs)
	p.next()
	p.parseFile()
	return p.f, p.errs
}

type parser struct {
	s     *scanner
	errs  ErrorList
	f     *File
	tok   Token
	pos   Pos
	lit   string
	depth int
	// prevNewline: the token before this one ended a line (an inserted
	// newline separator).
	prevNewline bool
}

func (p *parser) next() {
	p.prevNewline = p.tok == SEMI && p.lit == "\n"
	p.tok, p.pos, p.lit = p.s.next()
}

func (p *parser) errorf(pos Pos, format string, args ...any) { p.errs.Addf(pos, format, args...) }

func (p *parser) errorExpected(what string) {
	if p.tok == ILLEGAL {
		return // the scanner has reported the bad character
	}
	p.errorf(p.pos, "expected %s, found %s", what, describe(p.tok, p.lit))
}

// expect consumes tok, reporting an error if the current token differs.
func (p *parser) expect(tok Token, what string) Pos {
	pos := p.pos
	if p.tok != tok {
		p.errorExpected(what)
		return pos
	}
	p.next()
	return pos
}

// skipToEnd advances to the end of the current statement or declaration,
// stopping before a '}' or at the end of file.
func (p *parser) skipToEnd() {
	for p.tok != SEMI && p.tok != RBRACE && p.tok != EOF {
		p.next()
	}
}

func (p *parser) parseFile() {
	for p.tok != EOF {
		switch p.tok {
		case SEMI:
			p.next()
			continue
		case RBRACE:
			p.errorf(p.pos, "unexpected '}' outside step block")
			p.next()
			continue
		}
		n := len(p.errs)
		p.parseDecl()
		if len(p.errs) == n && p.tok != SEMI && p.tok != EOF {
			p.errorExpected("newline after declaration")
		}
		p.skipToEnd()
	}
}

func (p *parser) parseDecl() {
	switch p.tok {
	case OPTIMIZER:
		p.parseOptimizer()
	case HYPER:
		p.parseHyper()
	case STATE:
		p.parseState()
	case SCALAR:
		p.parseScalar()
	case OBSERVE:
		p.parseObserve()
	case STEP:
		p.parseStep()
	case DIAGNOSTIC:
		p.parseDiagnostic()
	case IDENT:
		if p.lit != NoiseKeyword {
			p.errorExpected("declaration (optimizer, hyper, state, scalar, observe, noise, step or diagnostic)")
			return
		}
		p.parseNoise()
	default:
		p.errorExpected("declaration (optimizer, hyper, state, scalar, observe, noise, step or diagnostic)")
	}
}

func (p *parser) add(d Decl) { p.f.Decls = append(p.f.Decls, d) }

func (p *parser) parseOptimizer() {
	d := &OptimizerDecl{Keyword: p.pos}
	p.next()
	d.Name = p.parseIdent()
	if p.f.Optimizer != nil {
		p.errorf(d.Keyword, "duplicate optimizer declaration (first at %s)", p.f.Optimizer.Keyword.LineCol())
		return
	}
	p.f.Optimizer = d
	p.add(d)
}

func (p *parser) parseHyper() {
	d := &HyperDecl{Keyword: p.pos}
	p.next()
	d.Name = p.parseIdent()
	p.expect(ASSIGN, "'=' and the hyper's default value")
	d.DefaultExpr = p.parseExpr()
	d.Default = signedNumber(d.DefaultExpr)
	if p.tok == IN {
		p.next()
		d.Range = p.parseRange()
	}
	if p.tok == ALIAS {
		d.Alias = p.parseAlias()
	}
	p.f.Hypers = append(p.f.Hypers, d)
	p.add(d)
}

func (p *parser) parseState() {
	d := &StateDecl{}
	d.Keyword, d.Name, d.Init = p.parseInitDecl("state", func() {
		if p.tok != COLON {
			return
		}
		p.next()
		d.Type = p.parseIdent()
		if _, ok := lang.AxisWords[d.Type.Name]; ok {
			d.Axis, d.Type = d.Type, nil
			if p.tok != IDENT {
				return
			}
			d.Type = p.parseIdent()
		}
		if p.tok == IDENT {
			d.Rounding = p.parseIdent()
		}
	})
	p.f.States = append(p.f.States, d)
	p.add(d)
}

func (p *parser) parseScalar() {
	d := &ScalarDecl{}
	d.Keyword, d.Name, d.Init = p.parseInitDecl("scalar", func() {})
	p.f.Scalars = append(p.f.Scalars, d)
	p.add(d)
}

// parseInitDecl parses `KEYWORD NAME ... = INIT`, a state or a scalar
// (what), with afterName parsing what comes between the name and '='.
func (p *parser) parseInitDecl(what string, afterName func()) (Pos, *Ident, Expr) {
	kw := p.pos
	p.next()
	name := p.parseIdent()
	afterName()
	p.expect(ASSIGN, "'=' and the "+what+"'s initial value")
	return kw, name, p.parseExpr()
}

func (p *parser) parseObserve() {
	d := &ObserveDecl{Keyword: p.pos}
	p.next()
	d.Kind = p.parseIdent()
	p.expect(LPAREN, "'(' after the observation kind")
	for p.tok != RPAREN && p.tok != SEMI && p.tok != EOF {
		a := &Arg{Name: p.parseIdent()}
		p.expect(ASSIGN, "'=' after the argument name")
		a.Value = p.parseExpr()
		d.Args = append(d.Args, a)
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	p.expect(RPAREN, "')' or ','")
	if p.f.Observe != nil {
		p.errorf(d.Keyword, "duplicate observe declaration (first at %s)", p.f.Observe.Keyword.LineCol())
		return
	}
	p.f.Observe = d
	p.add(d)
}

func (p *parser) parseStep() {
	d := &StepDecl{Keyword: p.pos}
	p.next()
	d.Rbrace = p.parseBraces("step", func() {
		if p.tok == HOST {
			p.parseHost(d)
			return
		}
		d.Body = append(d.Body, p.parseStmt()...)
	})
	if p.f.Step != nil {
		p.errorf(d.Keyword, "duplicate step block (first at %s)", p.f.Step.Keyword.LineCol())
		return
	}
	p.f.Step = d
	p.add(d)
}

// parseBraces parses `{ ... }` around the items of the what block, item
// parsing each (separators skipped), and returns the position of '}'.
func (p *parser) parseBraces(what string, item func()) Pos {
	p.expect(LBRACE, "'{' to open the "+what+" block")
	for p.tok != RBRACE && p.tok != EOF {
		if p.tok == SEMI {
			p.next()
			continue
		}
		item()
	}
	return p.expect(RBRACE, "'}' to close the "+what+" block")
}

// The words of the noise block, which are names elsewhere (a hyper noise,
// a state buffer): noise opens the block where a declaration may start,
// and buffer declares a buffer inside it where a name follows it.
const (
	NoiseKeyword  = "noise"
	BufferKeyword = "buffer"
)

// parseNoise parses `noise { buffer NAME ... statements }`, its buffer
// declarations first.
func (p *parser) parseNoise() {
	d := &NoiseDecl{Keyword: p.pos}
	p.next()
	d.Rbrace = p.parseBraces("noise", func() {
		if p.tok == IDENT && p.lit == BufferKeyword {
			p.parseBufferOrStmt(d)
			return
		}
		d.Body = append(d.Body, p.parseStmt()...)
	})
	if p.f.Noise != nil {
		p.errorf(d.Keyword, "duplicate noise block (first at %s)", p.f.Noise.Keyword.LineCol())
		return
	}
	p.f.Noise = d
	p.add(d)
}

// parseBufferOrStmt parses `buffer NAME`, which must come before the
// noise block's statements, or a statement that assigns a local named
// buffer (`buffer = ...`).
func (p *parser) parseBufferOrStmt(d *NoiseDecl) {
	b := &BufferDecl{Keyword: p.pos}
	p.next()
	if p.tok == ASSIGN {
		d.Body = append(d.Body, p.finishStmt(&Ident{NamePos: b.Keyword, Name: BufferKeyword}, len(p.errs))...)
		return
	}
	if len(d.Body) > 0 {
		p.errorf(b.Keyword, "buffer declarations come first in the noise block, before its statements")
	}
	b.Name = p.parseIdent()
	if p.tok != SEMI && p.tok != RBRACE {
		p.errorExpected("newline after the buffer's name (a buffer starts at 0: no noise was drawn before step 0)")
		p.skipToEnd()
	}
	d.Buffers = append(d.Buffers, b)
}

func (p *parser) parseDiagnostic() {
	d := &DiagnosticDecl{Keyword: p.pos}
	p.next()
	d.Kind = p.parseIdent()
	p.expect(LPAREN, "'(' after the diagnostic kind")
	for p.tok != RPAREN && p.tok != SEMI && p.tok != EOF {
		d.Args = append(d.Args, p.parseIdent())
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	p.expect(RPAREN, "')' or ','")
	p.f.Diags = append(p.f.Diags, d)
	p.add(d)
}

// parseHost parses `host { ... }`, which must open the step block.
func (p *parser) parseHost(d *StepDecl) {
	pos := p.pos
	switch {
	case len(d.Body) > 0:
		p.errorf(pos, "host { ... } must come first in step: the host updates the scalars before any coordinate is stepped")
	case d.HostPos.IsValid():
		p.errorf(pos, "duplicate host block (first at %s)", d.HostPos.LineCol())
	}
	p.next()
	p.expect(LBRACE, "'{' to open the host block")
	var body []*AssignStmt
	for p.tok != RBRACE && p.tok != EOF {
		if p.tok == SEMI {
			p.next()
			continue
		}
		body = append(body, p.parseStmt()...)
	}
	p.expect(RBRACE, "'}' to close the host block")
	if !d.HostPos.IsValid() && len(d.Body) == 0 {
		d.HostPos, d.Host = pos, body
	}
}

// parseStmt parses one assignment; none after a syntax error.
func (p *parser) parseStmt() []*AssignStmt {
	n := len(p.errs)
	if p.tok != IDENT {
		if p.tok >= ADD && p.tok <= POW && p.prevNewline {
			p.errorf(p.pos, "expected assignment (name = expression), found %s: the line before ends the statement, as it ends in a name, a number or ')'; to continue an expression on the next line, end the line before with the operator", describe(p.tok, p.lit))
		} else {
			p.errorExpected("assignment (name = expression)")
		}
		p.skipToEnd()
		return nil
	}
	return p.finishStmt(p.parseIdent(), n)
}

// finishStmt parses the rest of an assignment to lhs, from its '=';
// n is the number of errors before the statement.
func (p *parser) finishStmt(lhs *Ident, n int) []*AssignStmt {
	s := &AssignStmt{LHS: lhs}
	p.expect(ASSIGN, "'=' in assignment")
	s.RHS = p.parseExpr()
	if len(p.errs) == n && p.tok != SEMI && p.tok != RBRACE {
		p.errorExpected("newline after assignment")
	}
	p.skipToEnd()
	return []*AssignStmt{s}
}

// parseIdent parses a name. A missing name is reported and has Name "", so
// that the checker passes over it. A keyword in its place is skipped as if
// it were a name, ending its line like one, so that "optimizer step" does
// not swallow the next line.
func (p *parser) parseIdent() *Ident {
	id := &Ident{NamePos: p.pos}
	switch {
	case p.tok == IDENT:
		id.Name = p.lit
		p.next()
	case p.tok > keywordBeg && p.tok < keywordEnd:
		p.errorExpected("name")
		p.s.insertSemi = true
		p.next()
	default:
		p.errorExpected("name")
	}
	return id
}

// signedNumber is x as a signed number if it is one (a literal, with a
// minus or without), else nil.
func signedNumber(x Expr) *NumberLit {
	switch x := x.(type) {
	case *NumberLit:
		return x
	case *UnaryExpr:
		if n, ok := x.X.(*NumberLit); ok {
			return &NumberLit{ValuePos: x.OpPos, Lit: "-" + n.Lit, Value: -n.Value}
		}
	}
	return nil
}

func (p *parser) parseNumber() *NumberLit {
	x := &NumberLit{ValuePos: p.pos, Lit: p.lit}
	v, err := strconv.ParseFloat(p.lit, 64)
	if err != nil || math.IsInf(v, 0) {
		p.errorf(p.pos, "number %s is out of range for float64", p.lit)
		v = 0
	}
	x.Value = v
	p.next()
	return x
}

// parseAlias parses 'alias' name ['[' NUMBER ']'].
func (p *parser) parseAlias() *Alias {
	a := &Alias{Keyword: p.pos, Index: -1}
	p.next()
	a.Name = p.parseIdent()
	if p.tok != LBRACK {
		return a
	}
	a.Open = p.pos
	p.next()
	if p.tok != NUMBER {
		p.errorExpected("the index of the alias's element (0, 1, ...)")
		return nil
	}
	pos, lit := p.pos, p.lit
	i, err := strconv.Atoi(lit)
	if err != nil || i < 0 || i >= maxAliasIndex {
		p.errorf(pos, "alias index %s: want a whole number from 0 to %d", lit, maxAliasIndex-1)
		return nil
	}
	a.Index = i
	p.next()
	p.expect(RBRACK, "']' after the alias's index")
	return a
}

// maxAliasIndex bounds an alias's index: a sequence of hypers (betas) is short.
const maxAliasIndex = 16

// parseRange parses ('('|'[') bound ',' bound (')'|']').
func (p *parser) parseRange() *Range {
	r := &Range{Open: p.pos}
	switch p.tok {
	case LPAREN:
		r.LoOpen = true
	case LBRACK:
	default:
		p.errorExpected("'(' or '[' to open the range")
		return nil
	}
	p.next()
	r.Lo, r.LoLit = p.parseBound()
	p.expect(COMMA, "',' between the range's bounds")
	r.Hi, r.HiLit = p.parseBound()
	if math.IsNaN(r.Lo) || math.IsNaN(r.Hi) {
		return nil // reported by parseBound
	}
	switch p.tok {
	case RPAREN:
		r.HiOpen = true
	case RBRACK:
	default:
		p.errorExpected("')' or ']' to close the range")
		return nil
	}
	p.next()
	return r
}

// parseBound parses ['-'] (NUMBER | inf).
func (p *parser) parseBound() (float64, string) {
	sign, pos := "", p.pos
	if p.tok == SUB {
		sign = "-"
		p.next()
	}
	switch p.tok {
	case INF:
		p.next()
		if sign != "" {
			return math.Inf(-1), "-inf"
		}
		return math.Inf(1), "inf"
	case NUMBER:
		x := p.parseNumber()
		if sign != "" {
			return -x.Value, "-" + x.Lit
		}
		return x.Value, x.Lit
	}
	p.errorf(pos, "expected number or inf as a range bound, found %s", describe(p.tok, p.lit))
	return math.NaN(), "?"
}
