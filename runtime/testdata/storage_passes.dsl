// bfloat16 and float16 states that a diagnostic and a per-tensor reduction read: the
// passes besides the step widen them as the step does (docs/dsl.md,
// "Storage types"). A LAMB-like trust ratio of the stochastically rounded
// m and the clamp_mass of its second moment.

optimizer storage_passes

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 0.999 in [0, 1)
hyper eps_v = 1e-8 in [0, inf)

state m: bf16 stochastic = 0
state v: f16 = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	vbar = max(v - 0.5 * sigma_w2, eps_v)
	u = m / (sqrt(vbar) + 1e-8)
	ratio = norm(theta) / (norm(m) + max(v) + 1e-6)
	theta = theta - lr * ratio * u
}

diagnostic clamp_mass(m, vbar)
