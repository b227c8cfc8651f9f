// The diagnostic measures the update: a local it names must feed theta or a
// state, or the step never computes what it would report.

optimizer diagnostic_live

hyper lr = 0.1
hyper eps_v = 1e-8
state m = 0
state v = 0

step {
	m = 0.9 * m + g
	v = 0.99 * v + g * g
	mhat = m / (1 - 0.9 ** (t + 1))
	vbar = max(v, eps_v)
	theta = theta - lr * mhat
}

diagnostic clamp_mass(mhat, vbar) // ERROR col=29 "^diagnostic clamp_mass measures the update, but vbar feeds neither theta nor any state$"
