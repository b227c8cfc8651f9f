// FiBeR with linear warmup and cosine decay of the learning rate.
//
// optimizers/fiber.dsl with a schedule: the learning rate rises linearly
// over the first `warmup` steps from lr/warmup to lr, then follows half a
// cosine from lr down to lr_min at step `steps`, and stays there (lr_min's
// default, lr / 100, follows lr unless lr_min is set itself):
//     lr_t = lr_min + (lr - lr_min) * min((t + 1) / warmup, 1)
//            * (1 + cos(pi * p)) / 2,
//     p = min(max(t + 1 - warmup, 0) / max(steps - warmup, 1), 1).
// The schedule is a per-step uniform value: the host computes it once per
// step in float64 with fibergen's own cos (docs/dsl.md, "Schedules"), the
// same bits in the Go reference, the runtime and the PyTorch binding, and
// the kernel reads lr_t and lr_t * wd as float32 scalars. The filter, the
// moments and the noise correction are FiBeR's; the schedule changes no
// attenuation (A = (2 - omega) / (4 - 3 * omega), as in fiber.dsl).

optimizer fiber_cosine

hyper lr = 1e-3 in [0, inf)                  // the peak learning rate
hyper warmup = 100 in [1, inf)               // steps of linear warmup
hyper steps = 10000 in [1, inf)              // the step at which the cosine reaches lr_min
hyper lr_min = lr / 100 in [0, inf)          // the final learning rate: 1% of lr unless set
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda), scaled by lr_t
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
	warm = min((t + 1) / warmup, 1)
	progress = min(max(t + 1 - warmup, 0) / max(steps - warmup, 1), 1)
	lr_t = lr_min + (lr - lr_min) * warm * (0.5 * (1 + cos(3.141592653589793 * progress)))
	nu = g - gt
	r = (1 - omega) * r + omega * nu
	gt = gt + r
	m = beta1 * m + (1 - beta1) * gt
	v = beta2 * v + (1 - beta2) * (gt * gt)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	vbar = max(vhat - attenuation(gt) * sigma_w2, eps_v)
	theta = (1 - lr_t * wd) * theta - lr_t * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
