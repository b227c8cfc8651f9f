package dsl

// The noise block's own names: z, the fresh standard normal draw of the
// step, and w, the noise it defines. They mean something only inside the
// block; elsewhere z and w are ordinary names (a state z, a local w).
var (
	drawObj  = &Object{Kind: BuiltinObj, Name: NoiseDraw, Varying: true, Noise: true}
	noiseOut = &Object{Kind: BuiltinObj, Name: NoiseOut, Varying: true, Noise: true}
)

// The names of the noise block's draw and output.
const (
	NoiseDraw = "z"
	NoiseOut  = "w"
)

// IsNoiseDraw reports whether obj is z, the noise block's fresh draw.
func IsNoiseDraw(obj *Object) bool { return obj == drawObj }

// noiseName is the object of z or w in the noise block, or nil.
func noiseName(name string, s *scope) *Object {
	switch {
	case !s.noise:
		return nil
	case name == NoiseDraw:
		return drawObj
	case name == NoiseOut:
		return noiseOut
	}
	return nil
}

// checkNoise checks the noise block: its buffers, statements that assign
// each buffer and w once from z, the buffers, numbers and hypers, and that
// are linear in z and the buffers (docs/dsl.md, "Correlated noise").
func (c *checker) checkNoise() {
	d := c.f.Noise
	if d == nil {
		return
	}
	c.declareBuffers(d)
	s := &scope{where: "the noise block", noise: true, bound: map[string]bool{}, later: map[string]*AssignStmt{}, usedEarly: map[string]bool{}}
	for _, a := range d.Body {
		if c.names[a.LHS.Name] == nil && noiseName(a.LHS.Name, s) == nil && universe[a.LHS.Name] == nil && s.later[a.LHS.Name] == nil {
			s.later[a.LHS.Name] = a
		}
	}
	assigned := map[*Object]*AssignStmt{}
	linear := map[*Object]bool{drawObj: true}
	for _, b := range c.info.Buffers {
		linear[b] = true
	}
	for _, a := range d.Body {
		v := c.expr(a.RHS, s)
		c.assign(a, v, s, assigned)
		obj, reads := c.info.Defs[a], c.linearIn(a.RHS, linear)
		switch {
		case obj != nil && obj.Kind == LocalObj:
			linear[obj] = reads
		case obj != nil && !reads && !c.hasErrorOnLine(a.LHS.NamePos):
			c.errorf(a.RHS.Pos(), "%s = %s reads neither z nor a buffer: the noise block's w and buffers are linear in them, without a constant term", a.LHS.Name, ExprString(a.RHS))
		}
	}
	if !c.partial {
		c.checkNoiseAssigned(d, assigned)
	}
}

// declareBuffers declares the noise block's buffers.
func (c *checker) declareBuffers(d *NoiseDecl) {
	for _, b := range d.Buffers {
		if b.Name.Name == NoiseDraw || b.Name.Name == NoiseOut {
			c.errorf(b.Name.NamePos, "buffer %s: in the noise block, z is the fresh draw and w the noise it defines; name the buffer otherwise", b.Name.Name)
			continue
		}
		obj := &Object{Kind: BufferObj, Name: b.Name.Name, Pos: b.Name.NamePos, Varying: true, Noise: true}
		if c.declare(b.Name, obj) {
			c.info.Buffers = append(c.info.Buffers, obj)
		}
	}
}

// checkNoiseReadable enforces what the noise block may read: z, its
// buffers and locals, numbers and hypers — never g, theta or a state (the
// noise must not depend on the data or the model), nor t, sigma_w2 or a
// scalar (the filter must stay the same over training, as its sensitivity
// is derived once).
func (c *checker) checkNoiseReadable(id *Ident, obj *Object) {
	switch {
	case obj.Noise || obj.Kind == HyperObj:
		if obj == noiseOut {
			c.errorf(id.NamePos, "the noise block cannot read w, the noise it defines; bind a local to use a value twice")
		}
	case obj.Kind == StateObj || obj.Name == "g" || obj.Name == "theta":
		c.errorf(id.NamePos, "privacy: the noise block may read only z, its buffers, its locals, numbers and hypers, not %s %s: the noise must not depend on the data or the model", kindName(obj.Kind), id.Name)
	default:
		c.errorf(id.NamePos, "the noise block may read only z, its buffers, its locals, numbers and hypers, not %s %s: the noise filter must stay the same over training, as its sensitivity is derived once", kindName(obj.Kind), id.Name)
	}
}

// noiseAssignable reports whether the noise block may assign obj: a
// buffer or w, once each (c.assign counts), and its own new locals.
func (c *checker) noiseAssignable(id *Ident, obj *Object) bool {
	switch {
	case obj.Kind == BufferObj || obj == noiseOut:
		return true
	case obj == drawObj:
		c.errorf(id.NamePos, "cannot assign to z: it is the step's fresh standard normal draw")
	case obj.Kind == LocalObj && obj.Noise:
		c.errorf(id.NamePos, "local %s is already bound at %s; a local is bound once (use a new name)", id.Name, obj.Pos.LineCol())
	default:
		c.errorf(id.NamePos, "the noise block assigns its buffers, w and its own locals, not %s %s", kindName(obj.Kind), id.Name)
	}
	return false
}

// checkNoiseAssigned reports a buffer never updated, a w never assigned
// and locals never read.
func (c *checker) checkNoiseAssigned(d *NoiseDecl, assigned map[*Object]*AssignStmt) {
	for _, b := range c.info.Buffers {
		if assigned[b] == nil {
			c.errorf(b.Pos, "noise buffer %s is never updated in the noise block (it would stay 0)", b.Name)
		}
	}
	if assigned[noiseOut] == nil {
		c.errorf(d.Keyword, "the noise block never assigns w, the noise that enters g")
	}
	for _, l := range c.info.Locals {
		if l.Noise && l.uses == 0 && !c.hasErrorOnLine(l.Pos) {
			c.errorf(l.Pos, "local %s is bound but never used", l.Name)
		}
	}
}

// linearIn reports whether x reads the noise (z, a buffer, or a local in
// noisy), and reports where it does so other than linearly: the noise
// block is a linear filter, which is what fibergen derives the facts of.
func (c *checker) linearIn(x Expr, noisy map[*Object]bool) bool {
	switch x := x.(type) {
	case *Ident:
		return noisy[c.info.Uses[x]]
	case *ParenExpr:
		return c.linearIn(x.X, noisy)
	case *UnaryExpr:
		return c.linearIn(x.X, noisy)
	case *BinaryExpr:
		return c.linearBinary(x, noisy)
	case *CallExpr:
		return c.linearCall(x, noisy)
	}
	return false
}

func (c *checker) linearBinary(x *BinaryExpr, noisy map[*Object]bool) bool {
	a, b := c.linearIn(x.X, noisy), c.linearIn(x.Y, noisy)
	var why string
	switch {
	case !a && !b:
		return false
	case (x.Op == ADD || x.Op == SUB) && a != b:
		why = "adds a term without noise"
	case x.Op == ADD || x.Op == SUB:
		return true
	case x.Op == MUL && !(a && b):
		return true
	case x.Op == MUL:
		why = "multiplies two noise values"
	case x.Op == QUO && !b:
		return true
	case x.Op == QUO:
		why = "divides by a noise value"
	case x.Op == POW:
		why = "raises a noise value to a power"
	default:
		why = "compares noise values"
	}
	c.notLinear(x, x.OpPos, why)
	return true
}

func (c *checker) linearCall(x *CallExpr, noisy map[*Object]bool) bool {
	reads := false
	for _, a := range x.Args {
		reads = c.linearIn(a, noisy) || reads
	}
	if reads {
		c.notLinear(x, x.Fun.NamePos, "applies "+x.Fun.Name+" to a noise value")
	}
	return reads
}

func (c *checker) notLinear(x Expr, pos Pos, why string) {
	if c.hasErrorOnLine(pos) {
		return // the innermost non-linear operation is reported
	}
	c.errorf(pos, "%s %s: the noise block must be linear in z and its buffers, with coefficients of numbers and hypers", ExprString(x), why)
}

// NoiseBufferNames lists the noise block's buffers in declaration order.
func (f *File) NoiseBufferNames() []string {
	if f.Noise == nil {
		return nil
	}
	var out []string
	for _, b := range f.Noise.Buffers {
		out = append(out, b.Name.Name)
	}
	return out
}
