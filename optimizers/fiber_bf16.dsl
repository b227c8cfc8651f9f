// FiBeR with bfloat16 states: fiber with its filter (gt, r) and moments (m,
// v) stored as bfloat16, rounded to nearest (docs/dsl.md, "Storage types"):
// half the memory of the states and of their traffic; all arithmetic stays
// float32, and the attenuation and the correction are fiber's (the rounding
// of a stored state is not DP noise). What it costs in accuracy is measured
// in docs/reproduction.md ("Precision").
//
// Source: the FiBeR paper, Algorithm 2 (Section 3.3 and Appendix C). The
// privatized gradient g feeds an innovation (alpha-beta) filter: the residual
// nu = g - gt is smoothed into r and integrated into the filtered gradient gt.
// AdamW's moments run on gt, and the bias-corrected second moment is reduced
// by the filtered DP-noise variance A(omega) * sigma_w2, floored at eps_v.
// fibergen derives A = attenuation(gt) from the filter: (2 - omega) / (4 - 3 * omega)
// (`fibergen explain optimizers/fiber.dsl` shows the derivation).
// kappa and gamma only shape the two-point observation.

optimizer fiber_bf16

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

state gt: bf16 = 0   // filtered gradient
state r: bf16 = 0    // smoothed innovation
state m: bf16 = 0
state v: bf16 = 0

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
