// A diagnostic measures per-coordinate values: not a state per row.

optimizer diagnostic_axis

hyper lr = 0.1
hyper eps_v = 1e-8
state r: rows = 0

diagnostic clamp_mass(
	r,       // ERROR col=2 "^diagnostic clamp_mass needs the first moment per-coordinate, but r is per row$"
	vbar,
)

step {
	r = 0.9 * r + rowmean(g)
	vbar = max(g * g, eps_v)
	theta = theta - lr * r / sqrt(vbar)
}
