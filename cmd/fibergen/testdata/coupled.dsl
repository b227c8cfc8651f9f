// Weight decay's wd·θ fed into a momentum buffer b whose attenuation the
// step names: z = (b, θ), and at wd = 0 θ no longer feeds b, so b's
// stability and attenuation are the momentum's alone (explain_coupled_wd0).

optimizer coupled

hyper lr = 0.1
hyper mu = 0.9 in [0, 1]
hyper wd = 0.01 in [0, inf)
state b = 0
state s = 0

step {
	b = mu * b + (g + wd * theta)
	s = 0.9 * s + attenuation(b) * sigma_w2
	theta = theta - lr * b + 0 * s
}
