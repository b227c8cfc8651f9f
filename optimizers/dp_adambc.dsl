// DP-AdamBC: DP-AdamW with the second moment corrected for the DP noise.
//
// Source: Tang, Shpilevskiy & Lécuyer, "DP-AdamBC: Your DP-Adam Is Actually
// DP-SGD (Unless You Apply Bias Correction)" (AAAI 2024), Algorithm 1: the
// DP noise adds its variance sigma_w2 = (sigma * C / B)**2 to the expected
// square of every coordinate of g, so the bias-corrected second moment is
// reduced by it and floored:
//     vbar = max(vhat - sigma_w2, eps_v).
// In the FiBeR paper's terms (Section 5, the FiBeR_BC_CORR baseline) this
// is FiBeR's correction with A = 1 and no filter: the noise reaches the
// moments unattenuated. Tang et al. divide by sqrt(vbar) alone, the floor
// eps_v (their gamma') keeping it away from 0; eps = 0 gives exactly that,
// and the default eps = 1e-8 keeps the update written as in FiBeR and
// dp_adamw. Weight decay is decoupled (lambda), 0 by default, so the
// defaults give Tang et al.'s Adam.

optimizer dp_adambc

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in [0, inf)
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper eps_v = 1e-8 in (0, inf)               // floor of the corrected second moment (gamma'); 0 open: sqrt(vbar) + eps divides, eps can be 0

state m = 0
state v = 0

step {
	m = beta1 * m + (1 - beta1) * g
	v = beta2 * v + (1 - beta2) * (g * g)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	vbar = max(vhat - sigma_w2, eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
