// FiBeR_BC_CORR: FiBeR's innovation filter feeding DP-AdamW, with the
// unattenuated correction of DP-AdamBC (ablation: A = 1).
//
// Source: the FiBeR paper, Section 5 (ablation "Filter-aware second-moment
// correction", the baseline FiBeR_BC_CORR): Algorithm 2 with the
// bias-correction strategy of Tang et al. (2024), which ignores the
// filter's attenuation and subtracts the full DP-noise variance,
//     vbar = max(vhat - sigma_w2, eps_v).
// The innovation filter passes only A(omega) = (2 - omega) / (4 - 3 * omega)
// of that variance (0.846 at omega = 0.9), so this over-subtracts: it is
// the control that shows the attenuation matters. kappa and gamma only
// shape the two-point observation.

optimizer fiber_bccorr

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

state gt = 0   // filtered gradient
state r = 0    // smoothed innovation
state m = 0
state v = 0

step {
	nu = g - gt
	r = (1 - omega) * r + omega * nu
	gt = gt + r
	m = beta1 * m + (1 - beta1) * gt
	v = beta2 * v + (1 - beta2) * (gt * gt)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	vbar = max(vhat - sigma_w2, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
