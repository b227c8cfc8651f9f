package ptxsim

import (
	"fmt"
	"strconv"
	"strings"
)

// A token of PTX text: an identifier (opcodes with their modifiers,
// directives, registers, special registers, labels and parameter names all
// lex as one), a number, or one punctuation character.
type token struct {
	text string
	line int
	col  int
}

// lex splits PTX text into tokens, dropping // comments.
func lex(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line, col, i = line+1, 1, i+1
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i, col = i+1, col+1
			continue
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(src[i:], "/*"):
			return nil, fmt.Errorf("%d:%d: block comments are not part of the PTX fibergen emits", line, col)
		}
		n := 1
		if c == '"' {
			end := strings.IndexAny(src[i+1:], "\"\n")
			if end < 0 || src[i+1+end] != '"' {
				return nil, fmt.Errorf("%d:%d: unterminated string", line, col)
			}
			n = end + 2
		} else if isIdent(c) {
			for n < len(src)-i && isIdent(src[i+n]) {
				n++
			}
		} else if !strings.ContainsRune(",;:[]{}()<>+-@!", rune(c)) {
			return nil, fmt.Errorf("%d:%d: unexpected character %q", line, col, c)
		}
		toks = append(toks, token{src[i : i+n], line, col})
		i, col = i+n, col+n
	}
	return toks, nil
}

// typeNamed returns the type a directive names: .f32, .u64, ...
func typeNamed(s string) (ptype, bool) {
	t, ok := types[strings.TrimPrefix(s, ".")]
	return t, ok && strings.HasPrefix(s, ".")
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_$%.", c) >= 0
}

// parser reads a token list; its errors carry the position of the token
// they are about.
type parser struct {
	toks []token
	pos  int
}

type posError struct {
	line, col int
	msg       string
}

func (e *posError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	last := token{line: 1, col: 1}
	if len(p.toks) > 0 {
		last = p.toks[len(p.toks)-1]
	}
	return token{text: "", line: last.line, col: last.col + len(last.text)}
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

// fail stops the parse with an error at t.
func (p *parser) fail(t token, format string, args ...any) {
	panic(&posError{t.line, t.col, fmt.Sprintf(format, args...)})
}

func (p *parser) expect(text string) token {
	t := p.next()
	if t.text != text {
		p.fail(t, "expected %q, found %q", text, t.text)
	}
	return t
}

func (p *parser) accept(text string) bool {
	if p.peek().text == text {
		p.pos++
		return true
	}
	return false
}

// Parse reads a PTX module: the header directives and the .entry kernels,
// with only the directives, types, state spaces and instruction forms this
// package implements (see the package documentation); anything else is an
// error at its line and column.
func Parse(src []byte) (m *Module, err error) {
	toks, err := lex(string(src))
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*posError)
			if !ok {
				panic(r)
			}
			m, err = nil, pe
		}
	}()
	return p.module(), nil
}

func (p *parser) module() *Module {
	m := &Module{Kernels: map[string]*Kernel{}}
	for p.peek().text != "" {
		t := p.next()
		switch t.text {
		case ".version":
			m.Version = p.next().text
		case ".target":
			m.Target = p.next().text
		case ".address_size":
			if a := p.next(); a.text != "64" {
				p.fail(a, "only .address_size 64 is supported, not %s", a.text)
			}
		case ".visible", ".entry":
			if t.text == ".visible" {
				p.expect(".entry")
			}
			k := p.entry()
			if m.Kernels[k.Name] != nil {
				p.fail(t, "kernel %s defined twice", k.Name)
			}
			m.Kernels[k.Name] = k
		default:
			p.fail(t, "unsupported directive or statement %q at module scope", t.text)
		}
	}
	return m
}

// entry reads a kernel after .entry: its name, parameters and body.
func (p *parser) entry() *Kernel {
	name := p.next()
	k := &Kernel{Name: name.text}
	b := newBuilder(k)
	p.expect("(")
	for !p.accept(")") {
		if len(k.Params) > 0 {
			p.expect(",")
		}
		p.expect(".param")
		ty := p.next()
		pt, ok := typeNamed(ty.text)
		if !ok || pt.kind == 'p' {
			p.fail(ty, "unsupported parameter type %q", ty.text)
		}
		pn := p.next()
		k.Params = append(k.Params, Param{Name: pn.text, Type: pt.name, Size: pt.bits / 8})
	}
	p.expect("{")
	for !p.accept("}") {
		p.statement(b)
	}
	b.finish(p)
	return k
}

// statement reads a register declaration, a label or an instruction.
func (p *parser) statement(b *builder) {
	t := p.peek()
	switch {
	case t.text == "":
		p.fail(t, "unexpected end of file in kernel %s", b.k.Name)
	case t.text == ".reg":
		p.next()
		p.regDecl(b)
	case t.text == ".pragma":
		// An optimisation hint for the assembler, without semantics.
		p.next()
		if s := p.next(); s.text != `"nounroll"` {
			p.fail(s, "unsupported .pragma %s", s.text)
		}
		p.expect(";")
	case strings.HasPrefix(t.text, "."):
		p.fail(t, "unsupported directive %q in a kernel body", t.text)
	case p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == ":":
		p.pos += 2
		b.label(p, t)
	default:
		p.instruction(b)
	}
}

// regDecl reads `.type %name<N>;` or `.type %a, %b;` after .reg.
func (p *parser) regDecl(b *builder) {
	ty := p.next()
	rt, ok := typeNamed(ty.text)
	if !ok {
		p.fail(ty, "unsupported register type %q", ty.text)
	}
	for {
		name := p.next()
		if !strings.HasPrefix(name.text, "%") {
			p.fail(name, "expected a register name, found %q", name.text)
		}
		if p.accept("<") {
			nt := p.next()
			n, err := strconv.Atoi(nt.text)
			if err != nil || n < 0 || n > 1<<20 {
				p.fail(nt, "bad register count %q", nt.text)
			}
			p.expect(">")
			for i := range n {
				b.declare(p, name, fmt.Sprintf("%s%d", name.text, i), rt)
			}
		} else {
			b.declare(p, name, name.text, rt)
		}
		if !p.accept(",") {
			break
		}
	}
	p.expect(";")
}

// operand is an instruction operand as written.
type operand struct {
	tok  token
	kind byte // 'r' register or special register, 'i' immediate, 'a' address, 'v' vector, 'l' label
	name string
	imm  string // the immediate's text, sign included
	off  int64  // an address's offset
	vec  []operand
}

// instruction reads `[@[!]%p] opcode operand, ...;`.
func (p *parser) instruction(b *builder) {
	in := rawInst{guard: -1}
	if p.accept("@") {
		in.neg = p.accept("!")
		in.guardTok = p.next()
	}
	in.op = p.next()
	if !strings.Contains(in.op.text, ".") && in.op.text != "ret" && in.op.text != "bra" && in.op.text != "exit" {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
	for p.peek().text != ";" {
		if len(in.args) > 0 {
			p.expect(",")
		}
		in.args = append(in.args, p.operand())
	}
	p.expect(";")
	b.add(p, in)
}

func (p *parser) operand() operand {
	t := p.peek()
	switch t.text {
	case "":
		p.fail(t, "unexpected end of file in an instruction")
	case "[":
		p.next()
		base := p.next()
		o := operand{tok: t, kind: 'a', name: base.text}
		if p.accept("+") {
			neg := p.accept("-")
			nt := p.next()
			v, err := strconv.ParseInt(nt.text, 0, 64)
			if err != nil {
				p.fail(nt, "bad address offset %q", nt.text)
			}
			if neg {
				v = -v
			}
			o.off = v
		}
		p.expect("]")
		return o
	case "{":
		p.next()
		o := operand{tok: t, kind: 'v'}
		for !p.accept("}") {
			if len(o.vec) > 0 {
				p.expect(",")
			}
			if e := p.peek(); e.text == "{" || e.text == "" || len(o.vec) == 4 {
				p.fail(e, "a vector holds 2 or 4 registers")
			}
			o.vec = append(o.vec, p.operand())
		}
		return o
	case "-":
		p.next()
		nt := p.next()
		return operand{tok: t, kind: 'i', imm: "-" + nt.text}
	}
	p.next()
	switch c := t.text[0]; {
	case c == '%':
		return operand{tok: t, kind: 'r', name: t.text}
	case c >= '0' && c <= '9':
		return operand{tok: t, kind: 'i', imm: t.text}
	}
	return operand{tok: t, kind: 'l', name: t.text}
}
