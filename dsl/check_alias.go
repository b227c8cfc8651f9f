package dsl

import (
	"sort"
	"strconv"
)

// String returns the alias as written: weight_decay, betas[0].
func (a *Alias) String() string {
	if a.Index < 0 {
		return a.Name.Name
	}
	return a.Name.Name + "[" + strconv.Itoa(a.Index) + "]"
}

// checkAliases checks the hypers' aliases: an alias names no hyper (a
// binding could not tell them apart), no two hypers share one, a name is
// either a plain alias or a sequence, and a sequence's indexes run from 0
// without a gap or a repeat (betas[0], betas[1]).
func (c *checker) checkAliases() {
	hypers := map[string]bool{}
	for _, d := range c.f.Hypers {
		hypers[d.Name.Name] = true
	}
	byName := map[string][]*HyperDecl{}
	var names []string
	for _, d := range c.f.Hypers {
		a := d.Alias
		if a == nil || a.Name.Name == "" {
			continue
		}
		if hypers[a.Name.Name] {
			c.errorf(a.Name.NamePos, "alias %s of hyper %s is the name of a hyper", a.Name.Name, d.Name.Name)
			continue
		}
		if byName[a.Name.Name] == nil {
			names = append(names, a.Name.Name)
		}
		byName[a.Name.Name] = append(byName[a.Name.Name], d)
	}
	for _, name := range names {
		c.checkAliasGroup(byName[name])
	}
}

// checkAliasGroup checks the hypers that share one alias name, in their
// order in the file.
func (c *checker) checkAliasGroup(ds []*HyperDecl) {
	first := ds[0]
	if first.Alias.Index < 0 && len(ds) == 1 {
		return
	}
	seen := map[int]*HyperDecl{}
	for _, d := range ds[1:] {
		if d.Alias.Index < 0 || first.Alias.Index < 0 {
			c.errorf(d.Alias.Name.NamePos, "alias %s of hyper %s is hyper %s's alias too (an alias names one hyper, or each element of a sequence once: %s[0], %s[1])",
				d.Alias, d.Name.Name, first.Name.Name, d.Alias.Name.Name, d.Alias.Name.Name)
			return
		}
	}
	for _, d := range ds {
		if prev := seen[d.Alias.Index]; prev != nil {
			c.errorf(d.Alias.Open, "alias %s of hyper %s is hyper %s's alias too", d.Alias, d.Name.Name, prev.Name.Name)
			return
		}
		seen[d.Alias.Index] = d
	}
	indexes := make([]int, 0, len(seen))
	for i := range seen {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for want, i := range indexes {
		if i != want {
			d := seen[i]
			c.errorf(d.Alias.Open, "alias %s of hyper %s leaves %s[%d] to no hyper: a sequence's indexes run from 0 without a gap",
				d.Alias, d.Name.Name, d.Alias.Name.Name, want)
			return
		}
	}
}
