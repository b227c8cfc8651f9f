// FiBeR with a relative floor: the correction removes at most a share of the
// second moment.
//
// optimizers/fiber.dsl with one change, the floor of the corrected second
// moment (issue 36, docs/reproduction.md "Floor rules"):
//     vbar = max(vhat - A * sigma_w2, max(rho * vhat, eps_v)).
// FiBeR floors at the constant eps_v, so where the signal's second moment is
// small against the filtered noise A * sigma_w2 — most coordinates under DP —
// vhat - A * sigma_w2 falls to eps_v and the step there is ~1e4 times larger
// per unit of mhat than elsewhere: two step sizes at once. Here the
// correction keeps at least the share rho of vhat on every coordinate, so the
// step is at most 1 / sqrt(rho) times what uncorrected DP-Adam on gt would
// take there (rho = 0.25: at most twice), wherever the noise sits. It is the
// per-coordinate counterpart of fiber_nfloor's kappa_v * A * sigma_w2 (equal
// where vhat ~ A * sigma_w2), and needs no estimate of the noise's variance
// beyond the subtraction. The floor is a post-processing of the privatized g
// like the rest of the step (sigma_w2 and A are public).

optimizer fiber_rfloor

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper kappa = 0.6 in (0, 1]                  // 0 open: a divides by kappa, and gt would never see g
hyper gamma = 0.7 in (0, inf)                // 0 open: a = (1 - kappa) / (kappa * gamma) divides by it
hyper omega = 0.9 in (0, 1]                  // innovation gain; 0 open: gt would never see g (no attenuation)
hyper eps_v = 1e-8 in [0, inf)               // floor of the corrected second moment where vhat is 0
hyper rho = 0.25 in (0, 1)                   // the share of vhat the correction keeps; 0 open: that is fiber's floor (fiber.dsl); 1 open: no correction (fiber_nocorr.dsl)

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
	vbar = max(vhat - attenuation(gt) * sigma_w2, max(rho * vhat, eps_v))
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor (docs/dsl.md)
