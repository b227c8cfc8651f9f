// Storage types (docs/dsl.md): a colon, the type, and stochastic.
optimizer storage
hyper lr = 1e-3 in [0, inf)
state m :bf16 = 0
state v: bf16   stochastic = 0   // spaces do not matter
state c: f32 = 1
state plain = 0
step {
	m = 0.9 * m + 0.1 * g
	v = 0.999 * v + 0.001 * g * g
	c = c
	plain = plain + g
	theta = theta - lr * m / (sqrt(v) + 1e-8)
}
