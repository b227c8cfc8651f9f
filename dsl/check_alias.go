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

// torchKeys are the keys a torch param group gives a meaning of its own,
// each with that meaning: torch.optim or its LR schedulers read or write
// them, so a hyper named or aliased so would be taken for something it is
// not (docs/decisions.md, 92). lr, betas, weight_decay, eps and momentum
// are not here: they are quantities a hyper may be.
var torchKeys = map[string]string{
	"params":         "the group's parameters",
	"foreach":        "a flag of every torch.optim optimizer",
	"fused":          "a flag of every torch.optim optimizer, which its load_state_dict reads",
	"capturable":     "a flag of every torch.optim optimizer, which its load_state_dict reads",
	"differentiable": "a flag of every torch.optim optimizer",
	"maximize":       "a flag of every torch.optim optimizer: ascend the gradient",
	"initial_lr":     "the learning rate every LR scheduler starts from, which it writes",
	"max_lr":         "OneCycleLR's peak learning rate, which it writes",
	"min_lr":         "OneCycleLR's final learning rate, which it writes",
	"max_momentum":   "OneCycleLR's and CyclicLR's momentum bound, which they write",
	"base_momentum":  "OneCycleLR's and CyclicLR's momentum bound, which they write",
	"swa_lr":         "SWALR's learning rate, which it writes",
}

// checkAliases checks the hypers' aliases: an alias names no hyper (a
// binding could not tell them apart) and no key of torchKeys, no two hypers
// share one, a name is either a plain alias or a sequence, and a
// sequence's indexes run from 0 without a gap or a repeat (betas[0],
// betas[1]).
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
		if what := torchKeys[a.Name.Name]; what != "" {
			c.errorf(a.Name.NamePos, "alias %s of hyper %s is a key of torch's param groups (%s); choose another name", a.Name.Name, d.Name.Name, what)
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
