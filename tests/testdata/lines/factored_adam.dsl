// docs/dsl.md's factored Adam ("Rows and columns"), which the runtime's and
// the binding's tests step: keep the two the same (TestLinesOracle checks).
optimizer factored_adam
hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 0.999 in [0, 1)
hyper eps1 = 1e-30 in (0, inf)
hyper wd = 0 in [0, inf)
state m = 0
state r: rows = 0
state c: cols = 0
step {
	m = beta1 * m + (1 - beta1) * g
	r = beta2 * r + (1 - beta2) * rowmean(g * g + eps1)
	c = beta2 * c + (1 - beta2) * colmean(g * g + eps1)
	v = r * c / mean(r) / (1 - beta2 ** (t + 1))
	theta = theta - lr * (m / (1 - beta1 ** (t + 1)) / sqrt(v) + wd * theta)
}
