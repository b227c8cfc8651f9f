// A DP-Adam with bfloat16 states (docs/dsl.md, "Storage types"): m rounds
// to nearest, v and s stochastically (s from an initial value that is no
// bfloat16), and c stays float32. v and s are buffers 3 and 4: the high
// and the low half of their rounding words.

optimizer bf16mix

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 0.999 in [0, 1)

state m: bf16 = 0
state v: bf16 stochastic = 0
state s: bf16 stochastic = 1e-3
state c = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	s = s + 1e-4 * g
	c = c + 1
	theta = theta - lr * (m / (1 - beta1 ** (t + 1))) / (sqrt(v / (1 - beta2 ** (t + 1))) + 1e-8) + 1e-6 * s
}
