// abtrack: DP-AdamW on an alpha-beta tracker of the privatized gradient,
// with the filter-aware second-moment correction.
//
// A two-gain relative of FiBeR's innovation filter: the tracker predicts the
// gradient from its level gt and trend s, and corrects both with the
// innovation nu = g - (gt + s), with gain alpha for the level and beta for
// the trend (the alpha-beta filter of Kalata, 1984, with unit time step).
// The DP noise reaches gt through a two-state filter whose squared l2 gain,
//     (2 * alpha**2 + 2 * beta - 3 * alpha * beta) / (alpha * (4 - 2 * alpha - beta)),
// fibergen derives as attenuation(gt); the filter is stable exactly where
// 0 < alpha < 2 and 0 < beta < 4 - 2 * alpha, and fibergen rejects other
// settings.

optimizer abtrack

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper alpha = 0.5 in (0, 2)                  // gain of the level; open: the tracker is stable only for 0 < alpha < 2
hyper beta = 0.05 in (0, 4)                  // gain of the trend; open: stable only for 0 < beta < 4 - 2 * alpha
hyper eps_v = 1e-8 in [0, inf)               // floor of the corrected second moment

state gt = 0    // level: the filtered gradient
state s = 0     // trend of the gradient per step
state m = 0
state v = 0

step {
	pred = gt + s
	nu = g - pred
	gt = pred + alpha * nu
	s = s + beta * nu
	m = beta1 * m + (1 - beta1) * gt
	v = beta2 * v + (1 - beta2) * (gt * gt)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	vbar = max(vhat - attenuation(gt) * sigma_w2, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
