// DP-Adam: Adam on the privatized gradient, with no filter and no noise
// correction.
//
// Source: Kingma & Ba, "Adam: A Method for Stochastic Optimization" (2015),
// Algorithm 1, made private as in Abadi et al. (2016) by running it on the
// clipped, noised gradient g; the DP-Adam of Tang et al. (2024), Algorithm 1
// without the correction. Moments with bias correction; weight decay, if
// any, is the coupled L2 penalty of torch.optim.Adam, added to the gradient
// before the moments (g + wd * theta). theta is public state, so the
// penalized gradient is still a post-processing of g. For decoupled weight
// decay see dp_adamw.

optimizer dp_adam

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // coupled L2 weight decay

state m = 0
state v = 0

step {
	gw = g + wd * theta
	m = beta1 * m + (1 - beta1) * gw
	v = beta2 * v + (1 - beta2) * (gw * gw)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	theta = theta - lr * mhat / (sqrt(vhat) + eps)
}
