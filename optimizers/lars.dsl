// DP-LARS: SGD with momentum whose step is rescaled per tensor by the
// layer-wise trust ratio eta ||theta|| / (||g|| + wd ||theta||).
//
// Source: You, Gitman & Ginsburg, "Large Batch Training of Convolutional
// Networks" (2017), Algorithm 1 (LARS), made private as in Abadi et al.
// (2016) by running it on the clipped, noised gradient g. The local rate
// is 1 where either norm is 0, as in the common implementations. The norms
// are over each parameter tensor (a reduction pass before the step,
// docs/dsl.md, "Per-tensor reductions") and read g only privatized. The
// momentum buffer is fed a step whose size depends on the gradient: no
// fixed linear filter carries the noise, so no noise correction applies
// (docs/optimizers.md).

optimizer lars

hyper lr = 0.1 in [0, inf)
hyper mu = 0.9 in [0, 1) alias momentum // 1 open: the buffer would add up every step
hyper wd = 5e-4 in [0, inf) alias weight_decay
hyper eta = 1e-3 in (0, inf)             // the trust coefficient

state buf = 0

step {
	wnorm = norm(theta)
	gnorm = norm(g)
	local = select(wnorm > 0, select(gnorm > 0, eta * wnorm / (gnorm + wd * wnorm), 1), 1)
	buf = mu * buf + lr * local * (g + wd * theta)
	theta = theta - buf
}
