// A correlated-noise optimizer for the tests (docs/dsl.md, "Correlated
// noise"): a noise filter of two buffers, a local and a hyper, and a
// momentum whose attenuation is that of the joint system, the noise's
// colour included.

optimizer blt_probe

hyper lr = 0.1 in [0, inf)
hyper mu = 0.5 in [0, 1)
hyper decay = 0.875 in [0, 0.88]

state m = 0

noise {
	buffer s1
	buffer s2
	mix = 0.0434 * s1 + 0.46 * s2
	w = z - mix
	s1 = decay * s1 + z
	s2 = 0.23 * s2 + z
}

step {
	m = mu * m + (1 - mu) * g
	theta = theta - lr * m / (1 + attenuation(m) * sigma_w2)
}
