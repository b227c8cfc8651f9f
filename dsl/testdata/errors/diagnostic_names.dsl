// Hypers, undefined names and per-step uniform locals cannot be measured.

optimizer diagnostic_names

hyper lr = 0.1
hyper eps_v = 1e-8
state m = 0

step {
	m = 0.9 * m + g
	bc = 1 - 0.9 ** (t + 1)
	theta = theta - lr * m / bc
}

diagnostic clamp_mass(
	lr,      // ERROR col=2 "^diagnostic clamp_mass needs the first moment as a local or state of step, not the hyper lr$"
	vbar,    // ERROR col=2 "^undefined: vbar$"
)
