// FiBeR_NO_CORR: FiBeR's innovation filter feeding DP-AdamW, without the
// second-moment correction (ablation).
//
// Source: the FiBeR paper, Section 5 (ablation "Filter-aware second-moment
// correction", the variant without subtraction, FiBeR_NO_CORR): Algorithm 2
// with the correction disabled by setting A(omega) = 0, so
//     vbar = max(vhat, eps_v).
// Everything else is FiBeR's: the innovation nu = g - gt is smoothed into r
// and integrated into the filtered gradient gt, and AdamW's moments run on
// gt. With eps_v = 0 the floor does nothing and this is plain AdamW on the
// filtered gradient. kappa and gamma only shape the two-point observation.

optimizer fiber_nocorr

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper kappa = 0.6 in (0, 1]                  // 0 open: a divides by kappa, and gt would never see g
hyper gamma = 0.7 in (0, inf)                // 0 open: a = (1 - kappa) / (kappa * gamma) divides by it
hyper omega = 0.9 in (0, 1]                  // innovation gain; 0 open: gt would never see g (no attenuation)
hyper eps_v = 1e-8 in [0, inf)               // floor of the second moment

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
	vbar = max(vhat, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
