// DP-LAMB: Adam's update rescaled per tensor by the trust ratio
// ||theta|| / ||u||, for large-batch training.
//
// Source: You et al., "Large Batch Optimization for Deep Learning: Training
// BERT in 76 minutes" (ICLR 2020), Algorithm 2 (LAMB) with phi the identity,
// made private as in Abadi et al. (2016) by running it on the clipped, noised
// gradient g. The moments carry Adam's bias correction; u adds the decoupled
// weight decay; the ratio is 1 where either norm is 0, as in the common
// implementations. The norms are over each parameter tensor (norm: a
// reduction pass before the step, docs/dsl.md, "Per-tensor reductions"),
// and they read g only through its privatized value, so the step stays a
// post-processing of the privatized gradient. The second moment reads
// g * g and the ratio depends on the gradient: no linear filter carries
// the noise, so no noise correction applies (docs/optimizers.md).

optimizer lamb

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-6 in (0, inf)                 // 0 open: sqrt(vhat) + eps divides, and v can be 0
hyper wd = 0.01 in [0, inf) alias weight_decay

state m = 0
state v = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	u = mhat / (sqrt(vhat) + eps) + wd * theta
	wnorm = norm(theta)
	unorm = norm(u)
	trust = select(wnorm > 0, select(unorm > 0, wnorm / unorm, 1), 1)
	theta = theta - lr * trust * u
}
