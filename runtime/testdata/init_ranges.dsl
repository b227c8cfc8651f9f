// init_ranges: states whose initial values read a hyper, so that ranges
// with hypers of their own start from values of their own
// (runtime/ranges_init_test.go). The shipped optimizers' states all start
// at 0, whatever the hypers.

optimizer init_ranges

hyper lr = 0.1 in (0, inf)
hyper m0 = 1

state m = m0
state v = 2 * m0 + 0.5

step {
	m = m + g
	v = v + g * g
	theta = theta - lr * (m + v)
}
