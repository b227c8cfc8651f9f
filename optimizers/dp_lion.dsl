// DP-Lion: Lion on the privatized gradient: the update is the sign of an
// interpolation of the momentum and g, so every coordinate moves by exactly
// lr (plus the decoupled weight decay) in one direction or the other.
//
// Source: Chen et al., "Symbolic Discovery of Optimization Algorithms"
// (2023), Algorithm 2 (Lion), made private as in Abadi et al. (2016) by
// running it on the clipped, noised gradient g: c_t = beta1 m_{t-1} +
// (1 - beta1) g_t; theta_t = theta_{t-1} - lr (sign(c_t) + lambda theta_{t-1});
// m_t = beta2 m_{t-1} + (1 - beta2) g_t. The sign is not linear, so no noise
// correction applies to the update (docs/optimizers.md).
optimizer dp_lion

hyper lr = 1e-4 in [0, inf)
hyper beta1 = 0.9 in [0, 1] alias betas[0]
hyper beta2 = 0.99 in [0, 1) alias betas[1]  // 1 open: m would stay 0 and never see g
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)

state m = 0

step {
	c = beta1 * m + (1 - beta1) * g
	theta = theta - lr * (sign(c) + wd * theta)
	m = beta2 * m + (1 - beta2) * g
}
