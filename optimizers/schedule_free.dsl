// DP Schedule-Free AdamW: no learning-rate schedule and no stopping time to
// choose; the evaluation point is an average of the iterates, and the
// gradient is taken between the average and the base sequence.
//
// Source: Defazio et al., "The Road Less Scheduled" (NeurIPS 2024),
// Algorithm 1 (Schedule-Free AdamW), made private as in Abadi et al. (2016)
// by running it on the clipped, noised gradient g. theta is y_t, where the
// trainer evaluates the gradient; z is the base sequence and x the average
// that a trainer evaluates the model at (opt.state[p]["x"] in PyTorch,
// `fibergen run --state-out x=X.npy`). Both start at theta_0. The step size
// gamma_t = lr sqrt(1 - beta2^(t+1)) min(1, (t+1)/warmup) carries Adam's
// bias correction of v, and the average weighs step t by gamma_t^2
// (c_{t+1} = gamma_t^2 / sum of gamma_i^2 over i <= t), as in the paper. The
// second moment reads g * g, and z integrates g: no linear filter carries
// the noise, so no noise correction applies (docs/optimizers.md). A warm-up
// belongs in the warmup hyper, not in an outside schedule of lr: the host
// scalars are recomputed as if a changed lr had always held, and the
// weights c of a constant lr do not depend on it.
optimizer schedule_free

hyper lr = 0.0025 in [0, inf)
hyper beta1 = 0.9 in [0, 1] alias betas[0]   // y's weight on x; 1: the gradient at x
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: v would stay 0 and 1 - beta2 ** (t + 1) too
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // weight decay, at y as the paper's
hyper warmup = 0 in [0, inf)                 // steps of linear warm-up of gamma_t; 0: none

scalar lr_t = 0 // gamma_t
scalar c_t = 0  // the weight of z_{t+1} in the average x_{t+1}
scalar sum2 = 0 // the sum of gamma_i^2 over i <= t

state z = theta
state x = theta
state v = 0

step {
	host {
		gamma = lr * sqrt(1 - beta2 ** (t + 1)) * min(1, (t + 1) / max(warmup, 1))
		total = sum2 + gamma ** 2
		lr_t = gamma
		sum2 = total
		c_t = select(total > 0, gamma ** 2 / total, 0) // 0 at lr = 0, where x stays theta_0
	}
	v = beta2 * v + (1 - beta2) * (g * g)
	z = z - lr_t * (g / (sqrt(v) + eps) + wd * theta)
	x = (1 - c_t) * x + c_t * z
	theta = x + (1 - beta1) * (z - x) // (1 - beta1) z + beta1 x, exactly theta at lr = 0
}
