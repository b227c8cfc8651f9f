// A step that divides, on the host, by each tensor's gradient norm, which
// is 0 where the gradient is: the runtime refuses that step, naming the
// tensor (cmd/fibergen's TestReduceNonFinite, python/tests/test_reductions.py).
optimizer unguarded
hyper lr = 0.1 in [0, inf)
step {
	theta = theta - lr / norm(g) * g
}
