// DP AdEMAMix: Adam's update plus a slow EMA of the gradient, weighted by
// alpha; old gradients stay in the step for about 1 / (1 - beta3) steps.
//
// Source: Pagliardini, Ablin & Grangier, "The AdEMAMix Optimizer: Better,
// Faster, Older" (ICLR 2025), Algorithm 1 with its schedulers, made private
// as in Abadi et al. (2016) by running it on the clipped, noised gradient g.
// Over the first `warmup` steps alpha rises linearly from 0 and beta3's
// half-life, ln(0.5) / ln(beta3), rises linearly from beta1's to beta3's (the
// paper's scheduler, written as 1 / ln(beta3_t) = (1 - f) / ln(beta1) +
// f / ln(beta3), which is its formula and stays defined at beta1 = 0); the
// paper sets warmup to the run's length. warmup = 0 runs alpha and beta3 at
// their values from the first step, as the authors' code without a
// scheduler. Under DP the slow EMA is a filter of the noise too: while beta3
// warms up its coefficient changes from step to step, so m2 has no steady
// attenuation then, and attenuation_t(m2) would follow its variance exactly
// (docs/optimizers.md).
optimizer ademamix

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]  // 1 open: 1 - beta1 ** (t + 1) divides m1
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper beta3 = 0.9999 in [0, 1)               // the slow EMA's decay after the warm-up
hyper alpha = 5 in [0, inf)                  // the slow EMA's weight after the warm-up
hyper warmup = 0 in [0, inf)                 // steps of warm-up of alpha and beta3; 0: none
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)

scalar beta3_t = 0 // beta3 at step t
scalar alpha_t = 0 // alpha at step t

state m1 = 0
state m2 = 0
state v = 0

step {
	host {
		f = select(warmup > 0, min((t + 1) / max(warmup, 1), 1), 1)
		beta3_t = min(exp(1 / ((1 - f) / log(beta1) + f / log(beta3))), beta3)
		alpha_t = f * alpha
	}
	m1 = beta1 * m1 + (1 - beta1) * g
	m2 = beta3_t * m2 + (1 - beta3_t) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	mhat = m1 / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	theta = (1 - lr * wd) * theta - lr * (mhat + alpha_t * m2) / (sqrt(vhat) + eps)
}
