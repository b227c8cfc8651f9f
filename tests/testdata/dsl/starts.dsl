// States that start from theta and g (docs/dsl.md, "Initial values from
// theta and g"): an EMA of the weights and a momentum. Read by
// cmd/fibergen's --state-out test and the binding's state tests too.
optimizer starts
hyper lr = 0.1 in [0, inf)
state m = g
state avg = theta
step {
	m = 0.75 * m + 0.25 * g
	theta = theta - lr * m
	avg = 0.5 * avg + 0.5 * theta
}
