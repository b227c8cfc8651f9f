// A per-tensor reduction in a file with a noise block: the reduction pass
// would have to draw the correlated noise the step draws.

optimizer reductions_noise

hyper lr = 0.1
hyper lambda = 0.5 in [0, 1)

noise {
	buffer s
	w = z - lambda * s
	s = lambda * s + z
}

step {
	a = norm(g)                  // ERROR col=6 "^norm cannot be used with a noise block yet: the reduction pass would have to draw the correlated noise the step draws"
	theta = theta - lr * a * g
}
