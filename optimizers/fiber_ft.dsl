// FiBeR-FT: FiBeR with the finite-time attenuation of the innovation filter.
//
// Source: the FiBeR paper, Algorithm 2 with the correction of Appendix D,
// Lemma "Finite-time DP noise bound for the innovation filter": from the
// zero state gt = r = 0, the DP noise in gt after the steps 0..t has the
// variance A_t(omega) * sigma_w2, where A_t = e1' Sigma_t e1 and
//     Sigma_t = M Sigma_{t-1} M' + omega**2 * b b',  Sigma_{-1} = 0,
//     M = [[1 - omega, 1 - omega], [-omega, 1 - omega]],  b = [1, 1],
// which grows to A(omega) = (2 - omega) / (4 - 3 * omega) geometrically,
// at the rate of the spectral radius sqrt(1 - omega). fibergen derives
// A_t as attenuation_t(gt): the host keeps M**(t+1) b and the running sum,
// in float64, once per step. Early in training the steady-state
// correction of fiber.dsl over-subtracts (A_0 = omega**2 = 0.81 against
// A = 0.846 at omega = 0.9, and much more for small omega); this variant
// subtracts exactly the noise variance that has reached gt.
// kappa and gamma only shape the two-point observation.

optimizer fiber_ft

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
	vbar = max(vhat - attenuation_t(gt) * sigma_w2, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
