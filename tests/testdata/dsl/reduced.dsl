// Per-tensor reductions in the generated Go: a norm of theta alone (the
// reduction pass reads no g, so it draws no noise), a mean whose term
// reads the attenuation of a five-state cascade, more states than fibergen
// solves symbolically: only the reduction pass reads it, and the generated
// Host solves it once (NewHost); and a max and a min, which splice
// reduce's fold.go and the DSL's max and min.

optimizer reduced

hyper k1 = 0.5 in (0, 1]
hyper k2 = 0.3 in (0, 1]
hyper lr = 0.01

state e1 = 0
state e2 = 0
state e3 = 0
state e4 = 0
state e5 = 0

step {
	e1 = (1 - k1) * e1 + k1 * g
	e2 = (1 - k2) * e2 + k2 * e1
	e3 = (1 - k1) * e3 + k1 * e2
	e4 = (1 - k2) * e4 + k2 * e3
	e5 = (1 - k1) * e5 + k1 * e4
	wnorm = norm(theta)
	spread = mean(theta * theta * attenuation(e5))
	top = max(abs(e1 - theta))
	bottom = min(theta)
	theta = theta - lr * e5 * wnorm / (1 + wnorm + spread + top - bottom)
}
