// Every operation the generator emits, on a small optimizer.
optimizer ops

hyper lr = 0.5 in (0, 1]
hyper c = -2
hyper eps_v = 1e-6 in [0, inf)

state range = lr * 2   // a Go keyword, and a hyper-dependent start
state v1 = 0           // looks like a generator temporary

step {
	a = abs(g) + sqrt(abs(theta))
	b = min(a, range) - max(v1, eps_v)
	range = b ** 3 + g ** -2 - -b
	v1 = v1 + c * (2 * t + sigma_w2)
	theta = theta - lr * b / (1 + abs(c) ** 0.5)
}
