package dsl

// Expression grammar, lowest precedence first:
//
//	Expr    = Sum [ ("<" | "<=" | ">" | ">=" | "==" | "!=") Sum ] .
//	Sum     = Term { ("+" | "-") Term } .
//	Term    = Unary { ("*" | "/") Unary } .
//	Unary   = "-" Unary | Power .
//	Power   = Primary [ "**" Unary ] .
//	Primary = number | name | name "(" [ Expr { "," Expr } ] ")" | "(" Expr ")" .
//
// So -x**2 is -(x**2), 2**-1 is 2**(-1) and a**b**c is a**(b**c), as in
// Python.

func (p *parser) parseExpr() Expr {
	if !p.enter() {
		return &BadExpr{From: p.pos}
	}
	defer p.leave()
	x := p.parseSum()
	if p.tok.Op().IsComparison() {
		op, pos := p.tok, p.pos
		p.next()
		x = &BinaryExpr{X: x, OpPos: pos, Op: op, Y: p.parseSum()}
		if p.tok.Op().IsComparison() {
			p.errorf(p.pos, "comparisons do not chain: a < b < c is not a condition; compare two values")
		}
	}
	return x
}

func (p *parser) parseSum() Expr {
	x := p.parseTerm()
	for p.tok == ADD || p.tok == SUB {
		// A chain a + b + c is a left-leaning tree as deep as it is long.
		if !p.enter() {
			return &BadExpr{From: x.Pos()}
		}
		defer p.leave()
		op, pos := p.tok, p.pos
		p.next()
		x = &BinaryExpr{X: x, OpPos: pos, Op: op, Y: p.parseTerm()}
	}
	return x
}

func (p *parser) parseTerm() Expr {
	x := p.parseUnary()
	for p.tok == MUL || p.tok == QUO {
		if !p.enter() {
			return &BadExpr{From: x.Pos()}
		}
		defer p.leave()
		op, pos := p.tok, p.pos
		p.next()
		x = &BinaryExpr{X: x, OpPos: pos, Op: op, Y: p.parseUnary()}
	}
	return x
}

func (p *parser) parseUnary() Expr {
	if !p.enter() {
		return &BadExpr{From: p.pos}
	}
	defer p.leave()
	if p.tok == SUB {
		pos := p.pos
		p.next()
		return &UnaryExpr{OpPos: pos, Op: SUB, X: p.parseUnary()}
	}
	x := p.parsePrimary()
	if p.tok == POW {
		pos := p.pos
		p.next()
		x = &BinaryExpr{X: x, OpPos: pos, Op: POW, Y: p.parseUnary()}
	}
	return x
}

func (p *parser) parsePrimary() Expr {
	switch p.tok {
	case NUMBER:
		return p.parseNumber()
	case IDENT:
		id := p.parseIdent()
		if p.tok == LPAREN {
			return p.parseCall(id)
		}
		return id
	case LPAREN:
		pos := p.pos
		p.next()
		x := p.parseExpr()
		p.expect(RPAREN, "')'")
		return &ParenExpr{Lparen: pos, X: x}
	}
	pos := p.pos
	p.errorExpected("expression")
	if p.tok != SEMI && p.tok != RBRACE && p.tok != EOF && p.tok != RPAREN && p.tok != COMMA {
		p.next()
	}
	return &BadExpr{From: pos}
}

func (p *parser) parseCall(fun *Ident) Expr {
	p.next() // '('
	call := &CallExpr{Fun: fun}
	for p.tok != RPAREN && p.tok != SEMI && p.tok != EOF {
		call.Args = append(call.Args, p.parseExpr())
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	call.Rparen = p.expect(RPAREN, "')' or ',' in call")
	return call
}

// enter guards against unbounded nesting, which would exhaust the stack of
// the parser and of every pass that walks the tree; leave undoes it.
func (p *parser) enter() bool {
	if p.depth >= maxDepth {
		p.errorf(p.pos, "expression too long or nested too deeply (more than %d levels)", maxDepth)
		p.skipToEnd()
		return false
	}
	p.depth++
	return true
}

func (p *parser) leave() { p.depth-- }
