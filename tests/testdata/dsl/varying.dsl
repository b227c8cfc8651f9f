// Filters whose coefficients change from step to step (docs/dsl.md,
// "Time-varying filters"): a running mean, whose attenuation_t is
// 1 / (t + 1), and an alpha-beta tracker whose gains follow a host scalar.
// Tests: cmd/fibergen's TestVaryingAttenuation and TestRunVaryingBackends.
optimizer varying

hyper lr = 0.01 in [0, inf)
hyper beta = 0.9 in [0, 1)
hyper warmup = 10 in [1, inf)

scalar b = 0

state mean = 0
state l = 0
state s = 0

step {
	host {
		b = beta * min((t + 1) / warmup, 1)
	}
	mean = (1 - 1 / (t + 1)) * mean + g / (t + 1)
	p = l + s
	nu = g - p
	l = p + (1 - b) * nu
	s = s + (1 - b) * (1 - b) / 2 * nu
	theta = theta - lr * (mean / (1 + attenuation_t(mean)) + l * attenuation_t(l))
}
