// Integer powers of per-coordinate values (negative, zero, one, large),
// real powers of per-step values, and every built-in function.

optimizer powers

hyper lr = 1e-2 in (0, inf)
hyper beta = 0.9 in [0, 1)
hyper floor_v = 1e-6 in [0, inf)

state acc = 1
state peak = 0

step {
	q = abs(g) + 1
	acc = beta * acc + (1 - beta) * q ** -2
	peak = max(peak * beta, abs(g) ** 3)
	w = min(max(acc ** 3, floor_v), 1e3) * q ** 0 * q ** 1
	damp = (1 + beta ** t) ** -1 * sigma_w2 ** 0.5
	theta = theta - lr * g * sqrt(w) * damp - lr * 1e-3 * q ** -3 + 1e-9 * min(peak, 1) ** 7
}
