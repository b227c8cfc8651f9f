// exp, log, sin and cos: per-step uniform values only (the host computes
// them in float64), finite where they fold to a constant.

optimizer host_math

hyper lr = 0.1 in (0, inf)
hyper steps = 1000 in [1, inf)
state m = exp(lr)

step {
	warm = min(1, (t + 1) / 100)
	cosine = 0.5 * (1 + cos(3.141592653589793 * min(t / steps, 1)))
	decay = exp(-t / steps) * log(1 + lr) + sin(lr)
	a = exp(g)          // ERROR col=6 "^exp of a per-coordinate value: exp, log, sin and cos are computed on the host, in float64, once per step, and the kernels have none; apply exp to hypers, t and sigma_w2 \(a schedule\) or to values per row or per column, which the host computes too$"
	b = 1 + sin(m * lr) // ERROR col=10 "^sin of a per-coordinate value: .* apply sin to hypers, t and sigma_w2 \(a schedule\) or to values per row or per column"
	c = log(0)          // ERROR col=6 "^the constant log\(0\) is -Inf: constants must be finite \(float64\)$"
	d = cos(exp(lr) * g) // ERROR col=6 "^cos of a per-coordinate value"
	m = m + a + b + c + d
	theta = theta - lr * warm * cosine * decay * m
}
