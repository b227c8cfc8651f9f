// No states at all: a decaying step size computed on the host, and the
// two-point observation, which has no state to carry either.

optimizer nostate

hyper lr = 0.1 in (0, inf)
hyper kappa = 0.5 in (0, 1]
hyper gamma = 2 in (0, inf)

observe two_point(a = (1 - kappa) / (kappa * gamma), lookahead = gamma)

step {
	theta = theta - lr / (1 + t) * g
}
