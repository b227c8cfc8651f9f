// BLT DP-Adam: DP-Adam (dp_adam.dsl) on a gradient privatized with
// correlated noise from a buffered linear Toeplitz (BLT) noise filter
// instead of independent noise.
//
// Source: Dvijotham, McMahan, Pillutla, Steinke & Thakurta, "Efficient and
// Near-Optimal Noise Generation for Streaming Differential Privacy" (2024):
// the BLT filter; Kairouz, McMahan, Song, Thakkar, Thakurta & Xu, "Practical
// and Private (Deep) Learning without Sampling or Shuffling" (2021) and
// Choquette-Choo, McMahan, Rush & Thakurta, "Multi-Epoch Matrix
// Factorization Mechanisms for Private Machine Learning" (2023): any
// optimizer run on the correlated-noise gradient is a post-processing of one
// Gaussian mechanism on the strategy C (docs/correlated-noise.md), here
// Adam as Kingma & Ba, "Adam: A Method for Stochastic Optimization" (2015),
// Algorithm 1, with the coupled L2 weight decay of torch.optim.Adam, exactly
// as dp_adam.dsl. The noise entering g is w_t = Σ_s c_{t-s} z_s, the filter
// C⁻¹ = 1 + Σ_i blt_weight_i x / (1 - blt_decay_i x). Its privacy is that of
// the run's participation schema (fixed batches, minimum separation), not of
// Poisson sampling. No noise correction: v carries the noise's variance, as
// in dp_adam.
//
// The defaults of the four blt_ hypers are the noise filter `fibergen
// mechanism --steps 2000 --min-sep 200 --buffers 2` designs (2000 steps, an
// example at most once every 200, so ten epochs of 200 batches; error at
// unit sensitivity 0.0123 of DP-SGD's), as float32. For another run, design
// its own: `fibergen mechanism --steps N --min-sep B --buffers 2` prints the
// --set settings of blt_decay1, blt_decay2, blt_weight1 and blt_weight2
// (noise.decay[i] and noise.weight[i] of its --json). The filter cannot
// change after the first step.

optimizer blt_adam

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]      // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1]    // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                    // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay     // coupled L2 weight decay
hyper blt_decay1 = 0.930178642 in [0, 1)        // the buffers' decays: below 1, so the noise filter decays
hyper blt_decay2 = 0.324406326 in [0, 1)
hyper blt_weight1 = -0.0193223003 in [-1, 1]    // the buffers' weights in w; a designed filter's are in (-1, 0)
hyper blt_weight2 = -0.462569743 in [-1, 1]

state m = 0
state v = 0

noise {
	buffer s1
	buffer s2
	w = z + blt_weight1 * s1 + blt_weight2 * s2
	s1 = blt_decay1 * s1 + z
	s2 = blt_decay2 * s2 + z
}

step {
	gw = g + wd * theta
	m = beta1 * m + (1 - beta1) * gw
	v = beta2 * v + (1 - beta2) * (gw * gw)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	theta = theta - lr * mhat / (sqrt(vhat) + eps)
}
