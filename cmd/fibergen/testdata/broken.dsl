// a broken optimizer
optimizer broken

hyper lr = 1e-3 in (0, inf)
hyper lr = 2

state m = 0

step {
	m = beta1 * m + g
	theta = theta - lr * mhat
	x =
}
