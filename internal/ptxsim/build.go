package ptxsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ptype is a PTX fundamental type: its name, width in bits and kind
// ('f' float, 's' signed, 'u' unsigned, 'b' untyped bits, 'p' predicate).
type ptype struct {
	name string
	bits int
	kind byte
}

var types = map[string]ptype{}

func init() {
	for _, t := range []ptype{
		{"pred", 1, 'p'}, {"b16", 16, 'b'}, {"u16", 16, 'u'}, {"s16", 16, 's'}, {"b32", 32, 'b'}, {"b64", 64, 'b'}, {"u32", 32, 'u'}, {"u64", 64, 'u'},
		{"s32", 32, 's'}, {"s64", 64, 's'}, {"f32", 32, 'f'}, {"f64", 64, 'f'},
	} {
		types[t.name] = t
	}
}

// The special registers, each in a fixed slot of every thread's register
// file: %tid, %ntid, %ctaid, %nctaid (.x, .y, .z) and %laneid.
var specials = map[string]int32{}

const numSpecials = 13

func init() {
	for i, name := range []string{"%tid", "%ntid", "%ctaid", "%nctaid"} {
		for j, d := range []string{".x", ".y", ".z"} {
			specials[name+d] = int32(3*i + j)
		}
	}
	specials["%laneid"] = 12
}

// reg is a declared register: its slot in the register file and its type.
type reg struct {
	slot int32
	t    ptype
}

// rawInst is an instruction as parsed, before its operands are resolved.
type rawInst struct {
	guard    int32
	guardTok token
	neg      bool
	op       token
	args     []operand
}

// builder turns parsed statements into a kernel's code: it allocates
// register-file slots to registers and immediates and resolves labels once
// the body has been read.
type builder struct {
	k      *Kernel
	regs   map[string]reg
	consts map[uint64]int32
	labels map[string]int
	raw    []rawInst
}

func newBuilder(k *Kernel) *builder {
	k.init = make([]uint64, numSpecials)
	return &builder{k: k, regs: map[string]reg{}, consts: map[uint64]int32{}, labels: map[string]int{}}
}

// maxSlots bounds a kernel's register file: registers and immediates.
const maxSlots = 1 << 16

func (b *builder) declare(p *parser, at token, name string, t ptype) {
	if _, ok := b.regs[name]; ok {
		p.fail(at, "register %s declared twice", name)
	}
	if len(b.k.init) >= maxSlots {
		p.fail(at, "kernel %s declares more than %d registers", b.k.Name, maxSlots-numSpecials)
	}
	b.regs[name] = reg{int32(len(b.k.init)), t}
	b.k.init = append(b.k.init, 0)
}

func (b *builder) label(p *parser, t token) {
	if _, ok := b.labels[t.text]; ok {
		p.fail(t, "label %s defined twice", t.text)
	}
	b.labels[t.text] = len(b.raw)
}

// add keeps an instruction for finish, which compiles the body once every
// label is known.
func (b *builder) add(p *parser, in rawInst) {
	if in.guardTok.text != "" {
		r, ok := b.regs[in.guardTok.text]
		if !ok || r.t.kind != 'p' {
			p.fail(in.guardTok, "guard %q is not a declared predicate register", in.guardTok.text)
		}
		in.guard = r.slot
	}
	b.raw = append(b.raw, in)
}

// finish compiles the kernel's instructions.
func (b *builder) finish(p *parser) {
	if len(b.raw) == 0 {
		p.fail(p.toks[p.pos-1], "kernel %s has no instructions", b.k.Name)
	}
	for _, in := range b.raw {
		c := inst{text: in.op.text, line: in.op.line, guard: in.guard, neg: in.neg}
		b.compile(p, in, &c)
		b.k.code = append(b.k.code, c)
	}
	last := b.raw[len(b.raw)-1]
	b.k.code = append(b.k.code, inst{text: "(end)", line: last.op.line, guard: -1, kind: fallOff})
}

// src returns the slot of a source operand of type t: a register (or a
// special register, for a 32-bit integer type) or an immediate, which gets
// a constant slot.
func (b *builder) src(p *parser, o operand, t ptype) int32 {
	switch o.kind {
	case 'r':
		if s, ok := specials[o.name]; ok {
			if t.bits != 32 || t.kind == 'f' {
				p.fail(o.tok, "special register %s read as .%s", o.name, t.name)
			}
			return s
		}
		return b.register(p, o, t)
	case 'i':
		return b.constant(b.immediate(p, o, t))
	}
	p.fail(o.tok, "expected a register or an immediate of type .%s, found %q", t.name, o.tok.text)
	return 0
}

// dst returns the slot of a destination register of type t.
func (b *builder) dst(p *parser, o operand, t ptype) int32 {
	if _, special := specials[o.name]; o.kind != 'r' || special {
		p.fail(o.tok, "expected a destination register of type .%s, found %q", t.name, o.tok.text)
	}
	return b.register(p, o, t)
}

// register resolves a register operand used as type t: the declared type
// must be the same width, and a float instruction takes only float or
// untyped registers, an integer one only integer or untyped ones.
func (b *builder) register(p *parser, o operand, t ptype) int32 {
	r, ok := b.regs[o.name]
	if !ok {
		p.fail(o.tok, "undeclared register %s", o.name)
	}
	ok = r.t.bits == t.bits
	switch t.kind {
	case 'f':
		ok = ok && (r.t.kind == 'f' || r.t.kind == 'b')
	case 's', 'u':
		ok = ok && r.t.kind != 'f' && r.t.kind != 'p'
	case 'p':
		ok = r.t.kind == 'p'
	}
	if !ok {
		p.fail(o.tok, "register %s of type .%s used as .%s", o.name, r.t.name, t.name)
	}
	return r.slot
}

func (b *builder) constant(v uint64) int32 {
	if s, ok := b.consts[v]; ok {
		return s
	}
	if len(b.k.init) >= maxSlots {
		panic(&posError{1, 1, fmt.Sprintf("kernel %s has more than %d registers and immediates", b.k.Name, maxSlots)})
	}
	s := int32(len(b.k.init))
	b.k.init = append(b.k.init, v)
	b.consts[v] = s
	return s
}

// immediate parses an immediate of type t into its register-file bits:
// 0fXXXXXXXX for .f32, 0dXXXXXXXXXXXXXXXX for .f64, an integer (decimal or
// 0x hex, possibly negative) that fits the width for the integer types.
func (b *builder) immediate(p *parser, o operand, t ptype) uint64 {
	s := o.imm
	switch t.kind {
	case 'f':
		prefix, digits := "0f", 8
		if t.bits == 64 {
			prefix, digits = "0d", 16
		}
		if len(s) != 2+digits || !strings.HasPrefix(strings.ToLower(s), prefix) {
			p.fail(o.tok, "a .%s immediate is written %s and %d hex digits, not %q", t.name, prefix, digits, s)
		}
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			p.fail(o.tok, "bad .%s immediate %q", t.name, s)
		}
		return v
	case 'p':
		p.fail(o.tok, "a predicate cannot be an immediate")
	}
	v, ok := parseInt(s)
	if !ok {
		p.fail(o.tok, "bad integer immediate %q", s)
	}
	if t.bits == 32 {
		if v < math.MinInt32 || v > math.MaxUint32 {
			p.fail(o.tok, "immediate %s does not fit .%s", s, t.name)
		}
		return uint64(uint32(v))
	}
	return uint64(v)
}

// parseInt parses a PTX integer literal as fibergen writes them: decimal
// or 0x hexadecimal, possibly negative, in 64 bits.
func parseInt(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	base, digits := 10, s
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		base, digits = 16, s[2:]
	}
	if digits == "" || strings.ContainsAny(digits, "_+-") {
		return 0, false
	}
	u, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		return -int64(u), u <= 1<<63
	}
	return int64(u), true
}

// address resolves a [reg+off] operand of a global access.
func (b *builder) address(p *parser, o operand) (int32, int64) {
	if o.kind != 'a' {
		p.fail(o.tok, "expected an address [%%rd+offset], found %q", o.tok.text)
	}
	return b.register(p, operand{tok: o.tok, kind: 'r', name: o.name}, types["u64"]), o.off
}

// param resolves the [name+off] operand of ld.param of width bits: the
// parameter's index.
func (b *builder) param(p *parser, o operand, t ptype) int {
	if o.kind != 'a' {
		p.fail(o.tok, "expected a parameter [name], found %q", o.tok.text)
	}
	for i, pr := range b.k.Params {
		if pr.Name == o.name {
			if o.off != 0 || pr.Size*8 != t.bits {
				p.fail(o.tok, "ld.param.%s of parameter %s, declared .%s", t.name, o.name, pr.Type)
			}
			return i
		}
	}
	p.fail(o.tok, "no parameter %s in kernel %s", o.name, b.k.Name)
	return 0
}

// nargs checks that an instruction has n operands.
func nargs(p *parser, in rawInst, n int) {
	if len(in.args) != n {
		p.fail(in.op, "%s takes %d operands, not %d", in.op.text, n, len(in.args))
	}
}
