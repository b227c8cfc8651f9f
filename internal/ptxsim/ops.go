package ptxsim

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strings"
)

// canonNaN32 and canonNaN64 are the NaNs a GPU's float arithmetic returns.
const (
	canonNaN32 = 0x7fffffff
	canonNaN64 = 0x7fffffffffffffff
)

func f32(x uint64) float32 { return math.Float32frombits(uint32(x)) }
func f64(x uint64) float64 { return math.Float64frombits(x) }

func put32(v float32) uint64 {
	if v != v {
		return canonNaN32
	}
	return uint64(math.Float32bits(v))
}

func put64(v float64) uint64 {
	if v != v {
		return canonNaN64
	}
	return math.Float64bits(v)
}

// nan64 wraps a binary f64 operation: the first NaN operand's payload,
// quieted, passes through, as the PTX ISA lets f64 NaN payloads do.
func nan64(op func(x, y uint64) uint64) func(x, y uint64) uint64 {
	const quiet = 1 << 51
	return func(x, y uint64) uint64 {
		switch {
		case f64(x) != f64(x):
			return x | quiet
		case f64(y) != f64(y):
			return y | quiet
		}
		return op(x, y)
	}
}

// compile resolves one instruction's operands and sets its kind and
// semantics; an unsupported form is a parse error at its opcode.
func (b *builder) compile(p *parser, in rawInst, c *inst) {
	f := strings.Split(in.op.text, ".")
	switch f[0] {
	case "ret", "exit":
		if len(f) != 1 {
			p.fail(in.op, "unsupported instruction %q", in.op.text)
		}
		nargs(p, in, 0)
		c.kind = exit
		return
	case "bra":
		b.branch(p, in, f, c)
		return
	case "shfl":
		b.shuffle(p, in, f, c)
		return
	case "ld", "st", "atom":
		c.exec = b.memory(p, in, f)
		return
	}
	c.exec = b.alu(p, in, f)
}

func (b *builder) branch(p *parser, in rawInst, f []string, c *inst) {
	if len(f) > 2 || len(f) == 2 && f[1] != "uni" {
		p.fail(in.op, "unsupported branch %q", in.op.text)
	}
	nargs(p, in, 1)
	t, ok := b.labels[in.args[0].name]
	if in.args[0].kind != 'l' || !ok || t >= len(b.raw) {
		p.fail(in.args[0].tok, "branch to an undefined label %q", in.args[0].tok.text)
	}
	c.kind, c.target = branch, t
}

func (b *builder) shuffle(p *parser, in rawInst, f []string, c *inst) {
	if len(f) != 4 || f[1] != "sync" || !slices.Contains([]string{"up", "down", "bfly", "idx"}, f[2]) || f[3] != "b32" {
		p.fail(in.op, "unsupported shuffle %q (shfl.sync.{up,down,bfly,idx}.b32 without a predicate output)", in.op.text)
	}
	nargs(p, in, 5)
	t := types["b32"]
	c.kind = shflSync
	c.shfl = &shuffle{mode: f[2], d: b.dst(p, in.args[0], t), a: b.src(p, in.args[1], t),
		b: b.src(p, in.args[2], t), c: b.src(p, in.args[3], t), msk: b.src(p, in.args[4], t)}
}

// typ returns the type named by an opcode's last field.
func typ(p *parser, in rawInst, name string, kinds string) ptype {
	t, ok := types[name]
	if !ok || !strings.ContainsRune(kinds, rune(t.kind)) {
		p.fail(in.op, "unsupported type .%s in %s", name, in.op.text)
	}
	return t
}

// mods checks an opcode's fields between the first and the type.
func mods(p *parser, in rawInst, f []string, want ...string) {
	if !slices.Equal(f[1:len(f)-1], want) {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
}

// alu compiles the register-to-register instructions.
func (b *builder) alu(p *parser, in rawInst, f []string) func(*thread) {
	if len(f) < 2 {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
	last := f[len(f)-1]
	switch f[0] {
	case "add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr":
		return b.binary(p, in, f, last)
	case "neg", "abs", "not", "sqrt", "mov", "cvta":
		return b.unary(p, in, f, last)
	case "mad":
		t := typ(p, in, last, "su")
		mods(p, in, f, "lo")
		nargs(p, in, 4)
		d, x, y, z := b.dst(p, in.args[0], t), b.src(p, in.args[1], t), b.src(p, in.args[2], t), b.src(p, in.args[3], t)
		mask := widthMask(t)
		return func(th *thread) { th.r[d] = (th.r[x]*th.r[y] + th.r[z]) & mask }
	case "selp":
		t := typ(p, in, last, "bsuf")
		mods(p, in, f)
		nargs(p, in, 4)
		d, x, y, q := b.dst(p, in.args[0], t), b.src(p, in.args[1], t), b.src(p, in.args[2], t), b.src(p, in.args[3], types["pred"])
		return func(th *thread) {
			if th.r[q] != 0 {
				th.r[d] = th.r[x]
			} else {
				th.r[d] = th.r[y]
			}
		}
	case "setp":
		return b.setp(p, in, f, last)
	case "cvt":
		return b.cvt(p, in, f)
	case "bfe":
		return b.bfe(p, in, f, last)
	case "shf":
		return b.funnelShift(p, in, f, last)
	}
	p.fail(in.op, "unsupported instruction %q", in.op.text)
	return nil
}

func widthMask(t ptype) uint64 {
	switch t.bits {
	case 16:
		return math.MaxUint16
	case 32:
		return math.MaxUint32
	}
	return math.MaxUint64
}

// binaryKinds are the type kinds each binary opcode takes.
var binaryKinds = map[string]string{
	"add": "suf", "sub": "suf", "mul": "suf", "div": "suf", "min": "suf", "max": "suf", "rem": "su",
	"and": "bp", "or": "bp", "xor": "bp", "shl": "b", "shr": "bsu",
}

// binary compiles d = a op b.
func (b *builder) binary(p *parser, in rawInst, f []string, last string) func(*thread) {
	nargs(p, in, 3)
	t := typ(p, in, last, binaryKinds[f[0]])
	op := b.binaryOp(p, in, f, t)
	dt, bt := t, t
	switch {
	case f[0] == "mul" && f[1] == "wide":
		dt = types[map[byte]string{'s': "s64", 'u': "u64"}[t.kind]]
	case f[0] == "shl" || f[0] == "shr":
		bt = types["u32"]
	}
	d, x, y := b.dst(p, in.args[0], dt), b.src(p, in.args[1], t), b.src(p, in.args[2], bt)
	return func(th *thread) { th.r[d] = op(th.r[x], th.r[y]) }
}

// binaryOp returns the semantics of a binary opcode on type t.
func (b *builder) binaryOp(p *parser, in rawInst, f []string, t ptype) func(x, y uint64) uint64 {
	bad := func() { p.fail(in.op, "unsupported instruction %q", in.op.text) }
	switch t.kind {
	case 'f':
		switch {
		case slices.Contains([]string{"add", "sub", "mul", "div"}, f[0]):
			if !slices.Equal(f[1:len(f)-1], []string{"rn"}) {
				p.fail(in.op, "%s: only the IEEE round-to-nearest form .rn is supported (without it the code generator may contract or approximate)", in.op.text)
			}
		case len(f) == 3 && f[1] == "NaN" && t.bits == 32: // min.NaN, max.NaN: NaN if either is
			op := floatBinary(f[0], 32)
			return func(x, y uint64) uint64 {
				if f32(x) != f32(x) || f32(y) != f32(y) {
					return canonNaN32
				}
				return op(x, y)
			}
		default:
			mods(p, in, f)
		}
		if op := floatBinary(f[0], t.bits); op != nil {
			return op
		}
	case 'p': // and, or, xor (binaryKinds) of 0 and 1
		mods(p, in, f)
		if op := intBinary(f[0], t); op != nil {
			return op
		}
	default:
		if f[0] == "mul" {
			if len(f) == 3 && (f[1] != "wide" || t.bits == 32) && t.kind != 'b' {
				if op := intMul(f[1], t); op != nil {
					return op
				}
			}
			bad()
		}
		mods(p, in, f)
		if op := intBinary(f[0], t); op != nil {
			return op
		}
	}
	bad()
	return nil
}

func floatBinary(op string, width int) func(x, y uint64) uint64 {
	if width == 32 {
		return map[string]func(x, y uint64) uint64{
			"add": func(x, y uint64) uint64 { return put32(f32(x) + f32(y)) },
			"sub": func(x, y uint64) uint64 { return put32(f32(x) - f32(y)) },
			"mul": func(x, y uint64) uint64 { return put32(f32(x) * f32(y)) },
			"div": func(x, y uint64) uint64 { return put32(f32(x) / f32(y)) },
			"min": func(x, y uint64) uint64 { return put32(float32(minNum(float64(f32(x)), float64(f32(y))))) },
			"max": func(x, y uint64) uint64 { return put32(float32(-minNum(-float64(f32(x)), -float64(f32(y))))) },
		}[op]
	}
	arith := map[string]func(x, y uint64) uint64{
		"add": func(x, y uint64) uint64 { return put64(f64(x) + f64(y)) },
		"sub": func(x, y uint64) uint64 { return put64(f64(x) - f64(y)) },
		"mul": func(x, y uint64) uint64 { return put64(f64(x) * f64(y)) },
		"div": func(x, y uint64) uint64 { return put64(f64(x) / f64(y)) },
	}[op]
	if arith != nil {
		return nan64(arith)
	}
	return map[string]func(x, y uint64) uint64{
		"min": func(x, y uint64) uint64 { return put64(minNum(f64(x), f64(y))) },
		"max": func(x, y uint64) uint64 { return put64(-minNum(-f64(x), -f64(y))) },
	}[op]
}

// minNum is PTX's min: the other operand when one is NaN, NaN when both
// are, and -0 below +0.
func minNum(x, y float64) float64 {
	switch {
	case x != x:
		return y
	case y != y:
		return x
	case x == y && x == 0:
		if math.Signbit(x) {
			return x
		}
		return y
	case x < y:
		return x
	}
	return y
}

// intMul is mul.lo, mul.hi and mul.wide.
func intMul(mode string, t ptype) func(x, y uint64) uint64 {
	signed := t.kind == 's'
	switch {
	case mode == "lo":
		m := widthMask(t)
		return func(x, y uint64) uint64 { return x * y & m }
	case mode == "wide" && signed:
		return func(x, y uint64) uint64 { return uint64(int64(int32(x)) * int64(int32(y))) }
	case mode == "wide":
		return func(x, y uint64) uint64 { return uint64(uint32(x)) * uint64(uint32(y)) }
	case mode == "hi" && t.bits == 32 && signed:
		return func(x, y uint64) uint64 { return uint64(uint32(int64(int32(x)) * int64(int32(y)) >> 32)) }
	case mode == "hi" && t.bits == 32:
		return func(x, y uint64) uint64 { return uint64(uint32(x)) * uint64(uint32(y)) >> 32 }
	case mode == "hi" && !signed:
		return func(x, y uint64) uint64 { hi, _ := bits.Mul64(x, y); return hi }
	}
	return nil
}

// intBinary is the integer arithmetic, bitwise and shift instructions on
// t; 32-bit values live zero-extended in their slots.
func intBinary(op string, t ptype) func(x, y uint64) uint64 {
	m, w := widthMask(t), uint64(t.bits)
	sext := func(x uint64) int64 {
		if w == 32 {
			return int64(int32(x))
		}
		return int64(x)
	}
	signed := t.kind == 's'
	switch op {
	case "add":
		return func(x, y uint64) uint64 { return (x + y) & m }
	case "sub":
		return func(x, y uint64) uint64 { return (x - y) & m }
	case "and":
		return func(x, y uint64) uint64 { return x & y }
	case "or":
		return func(x, y uint64) uint64 { return x | y }
	case "xor":
		return func(x, y uint64) uint64 { return x ^ y }
	case "shl":
		return func(x, y uint64) uint64 { return x << min(uint32(y), 64) & m }
	case "shr":
		if signed {
			return func(x, y uint64) uint64 { return uint64(sext(x)>>min(uint32(y), 63)) & m }
		}
		return func(x, y uint64) uint64 { return x >> min(uint32(y), 64) }
	case "min", "max":
		less := func(x, y uint64) bool { return x < y }
		if signed {
			less = func(x, y uint64) bool { return sext(x) < sext(y) }
		}
		if op == "max" {
			return func(x, y uint64) uint64 { return pick(less(y, x), x, y) }
		}
		return func(x, y uint64) uint64 { return pick(less(x, y), x, y) }
	case "div", "rem":
		return intDiv(op, signed, sext, m)
	}
	return nil
}

// pick returns x if c, else y.
func pick(c bool, x, y uint64) uint64 {
	if c {
		return x
	}
	return y
}

// intDiv is div and rem; a zero divisor, or the one signed overflow, is a
// fault (PTX leaves their result unspecified).
func intDiv(op string, signed bool, sext func(uint64) int64, m uint64) func(x, y uint64) uint64 {
	return func(x, y uint64) uint64 {
		if y == 0 {
			panic(faultPanic{msg: "integer division by zero"})
		}
		if !signed {
			if op == "div" {
				return x / y
			}
			return x % y
		}
		a, b := sext(x), sext(y)
		if b == -1 && (a == math.MinInt64 || m == math.MaxUint32 && a == math.MinInt32) {
			panic(faultPanic{msg: "signed division overflow"})
		}
		if op == "div" {
			return uint64(a/b) & m
		}
		return uint64(a%b) & m
	}
}

// unary compiles d = op a.
func (b *builder) unary(p *parser, in rawInst, f []string, last string) func(*thread) {
	nargs(p, in, 2)
	var op func(uint64) uint64
	t := typ(p, in, last, "bsufp")
	switch f[0] {
	case "mov":
		mods(p, in, f)
		op = func(x uint64) uint64 { return x }
	case "cvta":
		if !slices.Equal(f[1:len(f)-1], []string{"to", "global"}) && !slices.Equal(f[1:len(f)-1], []string{"global"}) || t.name != "u64" {
			p.fail(in.op, "unsupported conversion %q (cvta.global.u64 and cvta.to.global.u64)", in.op.text)
		}
		// Global addresses are the same in the generic space.
		op = func(x uint64) uint64 { return x }
	case "sqrt":
		if t.kind != 'f' || !slices.Equal(f[1:len(f)-1], []string{"rn"}) {
			p.fail(in.op, "%s: only sqrt.rn.f32 and sqrt.rn.f64 (IEEE) are supported", in.op.text)
		}
		op = func(x uint64) uint64 { return put32(float32(math.Sqrt(float64(f32(x))))) }
		if t.bits == 64 {
			sqrt := nan64(func(x, _ uint64) uint64 { return put64(math.Sqrt(f64(x))) })
			op = func(x uint64) uint64 { return sqrt(x, 0) }
		}
	default:
		mods(p, in, f)
		op = unaryOp(f[0], t)
	}
	if op == nil {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
	d, x := b.dst(p, in.args[0], t), b.src(p, in.args[1], t)
	return func(th *thread) { th.r[d] = op(th.r[x]) }
}

// unaryOp is neg, abs and not on t.
func unaryOp(op string, t ptype) func(uint64) uint64 {
	m := widthMask(t)
	sign := uint64(1) << (t.bits - 1)
	switch {
	case op == "not" && t.kind == 'p':
		return func(x uint64) uint64 { return x ^ 1 }
	case op == "not" && t.kind == 'b':
		return func(x uint64) uint64 { return ^x & m }
	case op == "neg" && t.kind == 's':
		return func(x uint64) uint64 { return -x & m }
	case op == "abs" && t.kind == 's':
		return func(x uint64) uint64 {
			if x&sign != 0 {
				return -x & m
			}
			return x
		}
	// neg and abs on floats flip or clear the sign bit; a NaN gives the
	// canonical NaN in f32 (the ISA: "an unspecified NaN") and passes
	// through unchanged in f64.
	case op == "neg" && t.kind == 'f':
		return nanThrough(t, func(x uint64) uint64 { return x ^ sign })
	case op == "abs" && t.kind == 'f':
		return nanThrough(t, func(x uint64) uint64 { return x &^ sign })
	}
	return nil
}

// nanThrough gives op a NaN as neg and abs take it.
func nanThrough(t ptype, op func(uint64) uint64) func(uint64) uint64 {
	if t.bits == 64 {
		return func(x uint64) uint64 {
			if f64(x) != f64(x) {
				return x
			}
			return op(x)
		}
	}
	return func(x uint64) uint64 {
		if f32(x) != f32(x) {
			return canonNaN32
		}
		return op(x)
	}
}

// setp compiles setp.CMP.T p, a, b.
func (b *builder) setp(p *parser, in rawInst, f []string, last string) func(*thread) {
	if len(f) != 3 {
		p.fail(in.op, "unsupported comparison %q (no boolean combination is supported)", in.op.text)
	}
	nargs(p, in, 3)
	t := typ(p, in, last, "bsuf")
	cmp := compare(f[1], t)
	if cmp == nil {
		p.fail(in.op, "unsupported comparison %q", in.op.text)
	}
	d, x, y := b.dst(p, in.args[0], types["pred"]), b.src(p, in.args[1], t), b.src(p, in.args[2], t)
	return func(th *thread) {
		th.r[d] = 0
		if cmp(th.r[x], th.r[y]) {
			th.r[d] = 1
		}
	}
}

// compare returns the comparison cmp on t.
func compare(cmp string, t ptype) func(x, y uint64) bool {
	switch t.kind {
	case 'f':
		return floatCompare(cmp, t.bits)
	case 'b':
		if cmp != "eq" && cmp != "ne" {
			return nil
		}
	}
	signed := t.kind == 's'
	if slices.Contains([]string{"lo", "ls", "hi", "hs"}, cmp) {
		if signed {
			return nil
		}
		cmp = map[string]string{"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}[cmp]
	}
	key := func(x uint64) uint64 { return x }
	if signed { // order signed values by flipping the sign bit
		sign := uint64(1) << (t.bits - 1)
		key = func(x uint64) uint64 { return x ^ sign }
	}
	return map[string]func(x, y uint64) bool{
		"eq": func(x, y uint64) bool { return x == y },
		"ne": func(x, y uint64) bool { return x != y },
		"lt": func(x, y uint64) bool { return key(x) < key(y) },
		"le": func(x, y uint64) bool { return key(x) <= key(y) },
		"gt": func(x, y uint64) bool { return key(x) > key(y) },
		"ge": func(x, y uint64) bool { return key(x) >= key(y) },
	}[cmp]
}

// floatCompare: the ordered comparisons are false when an operand is NaN,
// the unordered ones (..u) true; num and nan test for NaN.
func floatCompare(cmp string, width int) func(x, y uint64) bool {
	val := func(x uint64) float64 { return float64(f32(x)) }
	if width == 64 {
		val = f64
	}
	unordered := len(cmp) == 3 && cmp[2] == 'u'
	base := strings.TrimSuffix(cmp, "u")
	if cmp == "num" || cmp == "nan" {
		want := cmp == "nan"
		return func(x, y uint64) bool { a, b := val(x), val(y); return (a != a || b != b) == want }
	}
	ord := map[string]func(a, b float64) bool{
		"eq": func(a, b float64) bool { return a == b },
		"ne": func(a, b float64) bool { return a != b && a == a && b == b },
		"lt": func(a, b float64) bool { return a < b },
		"le": func(a, b float64) bool { return a <= b },
		"gt": func(a, b float64) bool { return a > b },
		"ge": func(a, b float64) bool { return a >= b },
	}[base]
	if ord == nil || len(cmp) == 3 && !unordered {
		return nil
	}
	return func(x, y uint64) bool {
		a, b := val(x), val(y)
		if a != a || b != b {
			return unordered
		}
		return ord(a, b)
	}
}

// cvt compiles the conversions: between integer widths (truncating or
// extending by the source's signedness), f32 to f64 (exact), f64 to f32
// and integer to float (.rn).
func (b *builder) cvt(p *parser, in rawInst, f []string) func(*thread) {
	nargs(p, in, 2)
	if len(f) != 3 && len(f) != 4 {
		p.fail(in.op, "unsupported conversion %q", in.op.text)
	}
	rnd := ""
	if len(f) == 4 {
		rnd = f[1]
	}
	dt, st := typ(p, in, f[len(f)-2], "suf"), typ(p, in, f[len(f)-1], "suf")
	op := convert(rnd, dt, st)
	if op == nil {
		p.fail(in.op, "unsupported conversion %q", in.op.text)
	}
	d, x := b.dst(p, in.args[0], dt), b.src(p, in.args[1], st)
	return func(th *thread) { th.r[d] = op(th.r[x]) }
}

func convert(rnd string, dt, st ptype) func(uint64) uint64 {
	sint := func(x uint64) int64 {
		switch st.bits {
		case 16:
			return int64(int16(x))
		case 32:
			return int64(int32(x))
		}
		return int64(x)
	}
	switch {
	case dt.kind != 'f' && st.kind != 'f' && rnd == "":
		m := widthMask(dt)
		if st.kind == 's' {
			return func(x uint64) uint64 { return uint64(sint(x)) & m }
		}
		return func(x uint64) uint64 { return x & m }
	case dt.name == "f64" && st.name == "f32" && rnd == "":
		return func(x uint64) uint64 { return put64(float64(f32(x))) } // a NaN's f32 payload is not an f64's
	case dt.name == "f32" && st.name == "f64" && rnd == "rn":
		return func(x uint64) uint64 { return put32(float32(f64(x))) }
	case dt.kind == 'f' && st.kind != 'f' && rnd == "rn":
		toF := func(x uint64) float64 { return float64(x) } // a 32-bit value: exact
		if st.kind == 's' {
			toF = func(x uint64) float64 { return float64(sint(x)) }
		}
		if dt.bits == 32 && st.bits == 32 {
			// A 32-bit integer is exact in float64, so one rounding.
			return func(x uint64) uint64 { return put32(float32(toF(x))) }
		}
		if dt.bits == 64 && st.bits == 32 {
			return func(x uint64) uint64 { return put64(toF(x)) }
		}
		if dt.bits == 32 && st.bits == 64 { // Go's conversions round to nearest even, once
			if st.kind == 's' {
				return func(x uint64) uint64 { return put32(float32(int64(x))) }
			}
			return func(x uint64) uint64 { return put32(float32(x)) }
		}
	}
	return nil
}

// bfe compiles bfe.{u32,s32} d, a, pos, len: the len bits of a from bit
// pos (each taken mod 256), zero- or sign-extended; bits past 31 read as
// a's sign (s32) or 0 (u32).
func (b *builder) bfe(p *parser, in rawInst, f []string, last string) func(*thread) {
	t := typ(p, in, last, "su")
	mods(p, in, f)
	nargs(p, in, 4)
	if t.bits != 32 {
		p.fail(in.op, "unsupported instruction %q (bfe.u32 and bfe.s32 only)", in.op.text)
	}
	u := types["u32"]
	d, x, pos, n := b.dst(p, in.args[0], t), b.src(p, in.args[1], t), b.src(p, in.args[2], u), b.src(p, in.args[3], u)
	return func(th *thread) {
		a, ps, ln := int64(uint32(th.r[x])), th.r[pos]&0xff, th.r[n]&0xff
		if t.kind == 's' {
			a = int64(int32(th.r[x]))
		}
		if ln == 0 {
			th.r[d] = 0
			return
		}
		v := a >> min(ps, 63) & (1<<min(ln, 32) - 1)
		if t.kind == 's' && ln < 32 && v>>(ln-1)&1 == 1 {
			v |= -1 << ln
		}
		th.r[d] = uint64(v) & math.MaxUint32
	}
}

// funnelShift compiles shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: the high
// (l) or low (r) word of the 64-bit b:a shifted by c (mod 32 with .wrap,
// at most 32 with .clamp).
func (b *builder) funnelShift(p *parser, in rawInst, f []string, last string) func(*thread) {
	t := typ(p, in, last, "b")
	nargs(p, in, 4)
	if len(f) != 4 || t.bits != 32 || (f[1] != "l" && f[1] != "r") || (f[2] != "wrap" && f[2] != "clamp") {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
	u := types["u32"]
	d, lo, hi, c := b.dst(p, in.args[0], t), b.src(p, in.args[1], t), b.src(p, in.args[2], t), b.src(p, in.args[3], u)
	left, wrap := f[1] == "l", f[2] == "wrap"
	return func(th *thread) {
		n := th.r[c] & 0xffffffff
		if wrap {
			n &= 31
		}
		n = min(n, 32)
		v := th.r[hi]<<32 | th.r[lo]&0xffffffff
		if left {
			th.r[d] = v << n >> 32 & 0xffffffff
		} else {
			th.r[d] = v >> n & 0xffffffff
		}
	}
}

// memory compiles ld.param, ld.global[.nc][.v2|.v4], st.global[.v2|.v4]
// and atom.global.{min,max,add}.
func (b *builder) memory(p *parser, in rawInst, f []string) func(*thread) {
	if len(f) < 3 {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
	t := typ(p, in, f[len(f)-1], "bsuf")
	switch {
	case f[0] == "ld" && f[1] == "param" && len(f) == 3:
		nargs(p, in, 2)
		d, i := b.dst(p, in.args[0], t), b.param(p, in.args[1], t)
		return func(th *thread) { th.r[d] = th.l.readParam(i) }
	case f[0] == "atom" && f[1] == "global" && len(f) == 4:
		return b.atomic(p, in, f[2], t)
	case f[1] != "global":
		p.fail(in.op, "unsupported state space in %q (only .param loads and .global accesses)", in.op.text)
	}
	ms := f[2 : len(f)-1]
	nc := f[0] == "ld" && len(ms) > 0 && ms[0] == "nc"
	if nc {
		ms = ms[1:]
	}
	vec := 1
	if len(ms) == 1 && (ms[0] == "v2" || ms[0] == "v4") && t.bits <= 32 {
		vec, ms = int(ms[0][1]-'0'), ms[1:]
	}
	if len(ms) != 0 {
		p.fail(in.op, "unsupported instruction %q", in.op.text)
	}
	nargs(p, in, 2)
	if f[0] == "ld" {
		return b.load(p, in, t, vec, nc)
	}
	return b.store(p, in, t, vec)
}

// regs resolves the register (or, for a store, value) operands of a
// vec-wide access.
func (b *builder) vector(p *parser, o operand, t ptype, vec int, dst bool) []int32 {
	ops := []operand{o}
	if vec > 1 {
		if o.kind != 'v' || len(o.vec) != vec {
			p.fail(o.tok, "expected a vector of %d registers", vec)
		}
		ops = o.vec
	}
	var out []int32
	for _, x := range ops {
		t := b.accessType(x, t)
		if dst {
			out = append(out, b.dst(p, x, t))
		} else {
			out = append(out, b.src(p, x, t))
		}
	}
	return out
}

// accessType is the type a register operand o of a memory access of type
// t is resolved as: a 16-bit access may use a 32-bit integer register,
// which a load zero-extends into (.u16, .b16) and a store truncates.
func (b *builder) accessType(o operand, t ptype) ptype {
	if r, ok := b.regs[o.name]; ok && o.kind == 'r' && t.bits == 16 && r.t.bits == 32 && r.t.kind != 'f' {
		return types["u32"]
	}
	return t
}

func (b *builder) load(p *parser, in rawInst, t ptype, vec int, nc bool) func(*thread) {
	ds := b.vector(p, in.args[0], t, vec, true)
	base, off := b.address(p, in.args[1])
	size, kind := t.bits/8, load
	if nc {
		kind = loadNC
	}
	return func(th *thread) {
		mem := th.l.mem.access(th.l, th.r[base]+uint64(off), size*len(ds), size*len(ds), kind)
		for i, d := range ds {
			th.r[d] = readWord(mem[i*size:], size)
		}
	}
}

func (b *builder) store(p *parser, in rawInst, t ptype, vec int) func(*thread) {
	base, off := b.address(p, in.args[0])
	xs := b.vector(p, in.args[1], t, vec, false)
	size := t.bits / 8
	return func(th *thread) {
		mem := th.l.mem.access(th.l, th.r[base]+uint64(off), size*len(xs), size*len(xs), store)
		for i, x := range xs {
			writeWord(mem[i*size:], size, th.r[x])
		}
	}
}

// atomic compiles atom.global.OP.T d, [a], b: d gets the old value.
func (b *builder) atomic(p *parser, in rawInst, op string, t ptype) func(*thread) {
	nargs(p, in, 3)
	var f func(x, y uint64) uint64
	if t.kind == 's' || t.kind == 'u' {
		f = intBinary(op, t)
	}
	if f == nil || !slices.Contains([]string{"min", "max", "add"}, op) || op == "add" && t.name == "s64" {
		p.fail(in.op, "unsupported atomic %q", in.op.text)
	}
	d := b.dst(p, in.args[0], t)
	base, off := b.address(p, in.args[1])
	y := b.src(p, in.args[2], t)
	size := t.bits / 8
	return func(th *thread) {
		mem := th.l.mem.access(th.l, th.r[base]+uint64(off), size, size, atomic)
		old := readWord(mem, size)
		writeWord(mem, size, f(old, th.r[y]))
		th.r[d] = old
	}
}

func readWord(b []byte, size int) uint64 {
	switch size {
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func writeWord(b []byte, size int, v uint64) {
	switch size {
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}
