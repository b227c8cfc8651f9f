// DiSK-CORR: DiSK with the filter-aware second-moment correction.
//
// Source: the FiBeR paper, Appendix B.6 (eq. app_vbar_state): DiSK's EMA
//     gt_t = (1 - kappa) * gt_{t-1} + kappa * g_t
// scales the variance of the DP noise by A(kappa) = kappa / (2 - kappa), so
// the bias-corrected second moment is reduced by A(kappa) * sigma_w2 and
// floored at eps_v, as in FiBeR. fibergen derives A = attenuation(gt).

optimizer disk_corr

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper kappa = 0.6 in (0, 1]                  // filter gain; 0 open: a divides by kappa, and gt would never see g
hyper gamma = 0.7 in (0, inf)                // look-ahead; 0 open: a divides by gamma
hyper eps_v = 1e-8 in [0, inf)               // floor of the corrected second moment

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
	vbar = max(vhat - attenuation(gt) * sigma_w2, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
