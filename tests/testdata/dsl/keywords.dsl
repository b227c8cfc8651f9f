// States named like Go keywords, predeclared identifiers, the generated
// code's own identifiers (s, i, n, v1, u2, h, o, err, math, len), its
// functions, types, methods and fields (Step, Init, HostScalars, Scalars,
// T, update, hypers), and hypers named like the methods of Hypers (set,
// validate) and with underscores.

optimizer keywords

hyper lr = 0.01 in (0, inf)
hyper eps_v = 1e-8 in [0, inf)
hyper decay_rate_2 = 0.9 in [0, 1)
hyper set = 0.5 in [0, 1]
hyper validate = 2

state range = 0
state type = lr * 2    // an initial value that depends on a hyper
state func = 1
state i = 0
state n = 0
state s = 0
state v1 = 0
state u2 = 0
state h = 0
state o = 0
state err = 0
state math = 0
state len = 0
state update = 0
state hypers = validate
state Step = 0
state Init = 0
state HostScalars = 0
state Scalars = 0
state T = 0

step {
	range = decay_rate_2 * range + (1 - decay_rate_2) * g
	type = set * type + (1 - set) * abs(g)
	func = max(func * decay_rate_2, eps_v)
	i = i + 1
	n = n + g * g
	s = sqrt(n / i)
	v1 = min(g, v1)
	u2 = max(g, u2)
	h = range - type
	o = h * o * 0.5 + g
	err = err + abs(o - range)
	math = math * 0.5 + s
	len = v1 + u2
	update = update + len * eps_v
	hypers = hypers * 0.99 + validate * 0.01
	Step = Step + 1
	Init = Init + Step
	HostScalars = HostScalars * 0.5 + Init * 1e-3
	Scalars = min(Scalars, HostScalars - g)
	T = T + Scalars
	theta = theta - lr * range / (s + eps_v) - lr * eps_v * (func + err + math + update + hypers + T)
}
