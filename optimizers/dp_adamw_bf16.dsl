// DP-AdamW with bfloat16 moments: dp_adamw with m and v stored as bfloat16,
// rounded to nearest (docs/dsl.md, "Storage types"): half the memory of the
// states and of their traffic; all arithmetic stays float32. What it costs
// in accuracy is measured in docs/reproduction.md ("Precision").
//
// Source: Loshchilov & Hutter, "Decoupled Weight Decay Regularization"
// (2019), made private as in Abadi et al. (2016) by running it on the clipped,
// noised gradient g; the FiBeR paper's DP-AdamW baseline (Section 5). Moments
// with bias correction and decoupled weight decay, written exactly as
// FiBeR's update with the filter and the correction removed.

optimizer dp_adamw_bf16

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)

state m: bf16 = 0
state v: bf16 = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vhat) + eps)
}
