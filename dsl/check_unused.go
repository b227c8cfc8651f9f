package dsl

import "slices"

// warnUnused adds to Info.Warnings the hypers nothing reads and the states
// nothing reads but their own update: legal, but almost always a mistake
// (a misspelled name, a term left out of the update), and a state costs a
// buffer read and written at every step.
func (c *checker) warnUnused() {
	read := c.readObjects()
	for _, h := range c.info.Hypers {
		if !read[h] {
			c.info.Warnings.Addf(h.Pos, "warning: hyper %s is never used", h.Name)
		}
	}
	for _, s := range c.info.States {
		if !read[s] {
			c.info.Warnings.Addf(s.Pos, "warning: state %s is updated but nothing else reads it, so it does not change theta (and costs a buffer at every step)", s.Name)
		}
	}
	c.info.Warnings.Normalize()
}

// readObjects returns the objects some expression reads: a hyper's default,
// a state's or scalar's initial value, an observation argument, a
// diagnostic's argument or the right-hand side of a statement of the step
// or its host block, except the statement's own target there.
func (c *checker) readObjects() map[*Object]bool {
	read := map[*Object]bool{}
	mark := func(x Expr, self *Object) {
		Inspect(x, func(e Expr) bool {
			if id, ok := e.(*Ident); ok && c.info.Uses[id] != nil && c.info.Uses[id] != self {
				read[c.info.Uses[id]] = true
			}
			return true
		})
	}
	for _, d := range c.f.Hypers {
		mark(d.DefaultExpr, nil)
	}
	for _, d := range c.f.States {
		mark(d.Init, nil)
	}
	for _, d := range c.f.Scalars {
		mark(d.Init, nil)
	}
	if c.f.Observe != nil {
		for _, a := range c.f.Observe.Args {
			mark(a.Value, nil)
		}
	}
	for _, d := range c.f.Diags {
		for _, a := range d.Args {
			mark(a, nil)
		}
	}
	stmts := append(slices.Clone(c.f.Step.Host), c.f.Step.Body...)
	if c.f.Noise != nil {
		stmts = append(stmts, c.f.Noise.Body...)
	}
	for _, s := range stmts {
		mark(s.RHS, c.info.Defs[s])
	}
	return read
}
