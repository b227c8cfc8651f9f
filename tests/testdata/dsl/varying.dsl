// Filters whose coefficients change from step to step (docs/dsl.md,
// "Time-varying filters"): a running average, whose attenuation_t is
// 1 / (t + 1), and an alpha-beta tracker whose gains follow a host scalar;
// the host block reads the noise variance and the attenuations, of the
// time-varying tracker (before the scalar its gains read is assigned) and
// of a fixed EMA; attenuation_t(s) shares l's covariance scalars; the
// tracker's gains settle when the warm-up ends, so attenuation(l) is the
// steady value its attenuation_t tends to.
// Tests: cmd/fibergen's TestVaryingAttenuation and TestRunVaryingBackends.
optimizer varying

hyper lr = 0.01 in [0, inf)
hyper beta = 0.9 in [0, 1)
hyper warmup = 10 in [1, inf)

scalar b = 0
scalar acc = 0 // the noise variance that reached l, summed over the steps so far
scalar am = 0  // the EMA's gains, steady and finite-time

state avg = 0
state l = 0
state s = 0
state m = 0

step {
	host {
		acc = acc + sigma_w2 * attenuation_t(l)
		b = beta * min((t + 1) / warmup, 1)
		am = attenuation(m) + attenuation_t(m)
	}
	avg = (1 - 1 / (t + 1)) * avg + g / (t + 1)
	p = l + s
	nu = g - p
	l = p + (1 - b) * nu
	s = s + (1 - b) * (1 - b) / 2 * nu
	m = beta * m + (1 - beta) * g
	theta = theta - lr * (avg / (1 + attenuation_t(avg)) + l * attenuation_t(l) + s * attenuation_t(s) + m * am / (1 + acc) + l / (1 + attenuation(l)))
}
