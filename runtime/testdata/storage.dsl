// A DP-Adam with narrow states (docs/dsl.md, "Storage types"): m and v round
// stochastically to bfloat16 — buffers 2 and 3, the low and the high halves
// of one rounding word —, s to nearest bfloat16 from an initial value that is
// no bfloat16, h to nearest float16 from a subnormal one, q stochastically to
// float16 (buffer 7, the high half of a word whose low half, h's, goes
// unused), and c stays float32.

optimizer storage

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 0.999 in [0, 1)

state m: bf16 stochastic = 0
state v: bf16 stochastic = 0
state s: bf16 = 1e-3
state c = 0
state h: f16 = 1e-5
state q: f16 stochastic = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	s = s + 1e-4 * g
	c = c + 1
	h = 0.5 * h + 1e-6 * g
	q = 0.9 * q + 3000 * g
	theta = theta - lr * (m / (1 - beta1 ** (t + 1))) / (sqrt(v / (1 - beta2 ** (t + 1))) + 1e-8) + 1e-6 * s + h + 1e-9 * q
}
