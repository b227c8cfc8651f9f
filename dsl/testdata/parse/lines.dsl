// States per row and per column (docs/dsl.md, "Rows and columns"):
// Adafactor's factored second moment with a first moment in bf16.
optimizer lines
hyper lr = 1e-2 in [0, inf)
hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 0.999 in [0, 1)
hyper eps1 = 1e-30 in (0, inf)
state r:rows = 0
state c :  cols = eps1
state m: bf16 = 0
step {
	r = beta2 * r + (1 - beta2) * rowmean(g * g + eps1)
	c = beta2 * c + (1 - beta2) * colsum(g * g + eps1) / sum(r)
	rn = r / mean(r)           // per row
	v = rn * c                 // per coordinate: the outer product
	m = beta1 * m + (1 - beta1) * g / sqrt(v)
	theta = theta - lr * m / max(1, norm(rn) + max(c) - min(rn))
}
