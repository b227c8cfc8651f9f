// Aliases in their canonical form: after the range, or after the default
// where there is none; an index in brackets; a sequence in any order.
optimizer aliases
hyper b2 = 0.999 in [0, 1)   alias  betas [ 1 ]
hyper lr = 1e-3 in [0, inf)
hyper b1 = 0.9 in [0, 1) alias betas[0]; hyper wd = 0 alias weight_decay
state m = 0
step {
	m = b1 * m + (1 - b1) * g + b2 * 0
	theta = (1 - lr * wd) * theta - lr * m
}
