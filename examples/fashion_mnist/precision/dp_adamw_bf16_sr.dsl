// dp_adamw with its states stored as bfloat16, rounded stochastically: the
// precision study's (examples/fashion_mnist/study.py, docs/reproduction.md),
// beside the shipped dp_adamw_bf16, which rounds to nearest.

optimizer dp_adamw_bf16_sr

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)

state m: bf16 stochastic = 0
state v: bf16 stochastic = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vhat) + eps)
}
