// fiber with its states stored as bfloat16, rounded stochastically: the
// precision study's (examples/fashion_mnist/study.py, docs/reproduction.md),
// beside the shipped fiber_bf16, which rounds to nearest.

optimizer fiber_bf16_sr

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper kappa = 0.6 in (0, 1]                  // 0 open: a divides by kappa, and gt would never see g
hyper gamma = 0.7 in (0, inf)                // 0 open: a = (1 - kappa) / (kappa * gamma) divides by it
hyper omega = 0.9 in (0, 1]                  // innovation gain; 0 open: gt would never see g (no attenuation)
hyper eps_v = 1e-8 in [0, inf)               // floor of the corrected second moment

observe two_point(a = (1 - kappa) / (kappa * gamma), lookahead = gamma)

state gt: bf16 stochastic = 0   // filtered gradient
state r: bf16 stochastic = 0    // smoothed innovation
state m: bf16 stochastic = 0
state v: bf16 stochastic = 0

step {
	nu = g - gt
	r = (1 - omega) * r + omega * nu
	gt = gt + r
	m = beta1 * m + (1 - beta1) * gt
	v = beta2 * v + (1 - beta2) * (gt * gt)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	vbar = max(vhat - attenuation(gt) * sigma_w2, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
