// DiSK: DP-AdamW on a Kalman-style EMA of the privatized gradient.
//
// Source: Zhang et al., "DiSK: Differentially Private Optimizer with
// Simplified Kalman Filter for Noise Reduction" (2024), as summarized in the
// FiBeR paper (eq. 4 and Appendix B.6): the steady-state scalar Kalman filter
// of a random-walk gradient model is the EMA
//     gt_t = (1 - kappa) * gt_{t-1} + kappa * g_t,
// fed to AdamW with bias correction and decoupled weight decay. g comes from
// the two-point observation with a = (1 - kappa) / (kappa * gamma). Plain
// DiSK applies no second-moment correction for the filtered noise.

optimizer disk

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper kappa = 0.6 in (0, 1]                  // filter gain; 0 open: a divides by kappa, and gt would never see g
hyper gamma = 0.7 in (0, inf)                // look-ahead; 0 open: a divides by gamma

observe two_point(a = (1 - kappa) / (kappa * gamma), lookahead = gamma)

state gt = 0    // filtered gradient
state m = 0
state v = 0

step {
	gt = (1 - kappa) * gt + kappa * g
	m = beta1 * m + (1 - beta1) * gt
	v = beta2 * v + (1 - beta2) * (gt * gt)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vhat) + eps)
}
