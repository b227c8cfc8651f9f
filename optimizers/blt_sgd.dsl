// BLT DP-SGD: SGD with heavy-ball momentum on a gradient privatized with
// correlated noise from a buffered linear Toeplitz (BLT) noise filter, the
// matrix-factorization mechanism of DP-FTRL.
//
// Source: Dvijotham, McMahan, Pillutla, Steinke & Thakurta, "Efficient and
// Near-Optimal Noise Generation for Streaming Differential Privacy" (2024):
// the BLT filter; Kairouz, McMahan, Song, Thakkar, Thakurta & Xu, "Practical
// and Private (Deep) Learning without Sampling or Shuffling" (2021): DP-FTRL
// with momentum; Choquette-Choo, McMahan, Rush & Thakurta, "Multi-Epoch
// Matrix Factorization Mechanisms for Private Machine Learning" (2023) and
// Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke & Thakurta,
// "Correlated Noise Provably Beats Independent Noise for Differentially
// Private Learning" (2024): the noise entering g is w_t = Σ_s c_{t-s} z_s, the
// filter C⁻¹ = 1 + Σ_i blt_weight_i x / (1 - blt_decay_i x), and SGD with
// momentum on g releases a post-processing of one Gaussian mechanism on the
// strategy C (docs/correlated-noise.md). Its privacy is that of the run's
// participation schema (fixed batches, minimum separation), not of Poisson
// sampling. m = momentum * m + g; theta = theta - lr * m, as torch.optim.SGD
// with momentum (dampening 0); with momentum 0 it is DP-SGD with BLT noise.
//
// The defaults of the four blt_ hypers are the noise filter `fibergen
// mechanism --steps 2000 --min-sep 200 --buffers 2` designs (2000 steps, an
// example at most once every 200, so ten epochs of 200 batches; error at
// unit sensitivity 0.0123 of DP-SGD's), as float32. For another run, design
// its own: `fibergen mechanism --steps N --min-sep B --buffers 2` prints the
// --set settings of blt_decay1, blt_decay2, blt_weight1 and blt_weight2
// (noise.decay[i] and noise.weight[i] of its --json). The filter cannot
// change after the first step.

optimizer blt_sgd

hyper lr = 0.01 in [0, inf)
hyper mu = 0.9 in [0, 1) alias momentum  // 1 open: m would never forget a step
hyper blt_decay1 = 0.930178642 in [0, 1)  // the buffers' decays: below 1, so the noise filter decays
hyper blt_decay2 = 0.324406326 in [0, 1)
hyper blt_weight1 = -0.0193223003 in [-1, 1] // the buffers' weights in w; a designed filter's are in (-1, 0)
hyper blt_weight2 = -0.462569743 in [-1, 1]

state m = 0 // momentum

noise {
	buffer s1
	buffer s2
	w = z + blt_weight1 * s1 + blt_weight2 * s2
	s1 = blt_decay1 * s1 + z
	s2 = blt_decay2 * s2 + z
}

step {
	m = mu * m + g
	theta = theta - lr * m
}
