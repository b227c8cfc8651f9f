// DOPPLER: DP-AdamW on a second-order low-pass (IIR) filter of the
// privatized gradient, with the filter-aware second-moment correction.
//
// Source: Zhang et al., "DOPPLER: Differentially Private Optimizers with
// Low-pass Filter for Privacy Noise Reduction" (NeurIPS 2024), the FiBeR
// paper's low-pass baseline (Section 5): the privatized gradient g passes a
// linear time-invariant low-pass filter before the optimizer's moments,
//     y_t = b0 * g_t + b1 * g_{t-1} - a1 * y_{t-1} - a2 * y_{t-2},
// here of order two (two poles, one zero), with the coefficients as hypers.
// AdamW with bias correction runs on y, and its bias-corrected second
// moment is reduced by the filtered DP-noise variance A * sigma_w2 and
// floored at eps_v, as in FiBeR and DiSK-CORR. fibergen derives
// A = attenuation(y), the squared l2 gain of the filter,
//     ((b0**2 + b1**2) * (1 + a2) - 2 * a1 * b0 * b1)
//         / ((1 - a2) * ((1 + a2)**2 - a1**2)),
// and rejects coefficients outside the stability triangle
// |a2| < 1, 1 + a1 + a2 > 0, 1 - a1 + a2 > 0.
//
// Defaults: a double pole at z = 0.5 (a1 = -1, a2 = 0.25, critically
// damped, no overshoot) and a zero at z = -1 (b0 = b1), which removes the
// highest frequency entirely, scaled to unit DC gain
// (b0 + b1) / (1 + a1 + a2) = 1, so b0 = b1 = 0.125: a constant gradient
// passes unchanged while white DP noise keeps A = 1/6 of its variance.
// Every default is exact in binary. The coefficients are free: keep
// (b0 + b1) = (1 + a1 + a2) when changing them, or the filter rescales the
// gradient (AdamW is nearly scale-invariant, but the correction is not).
//
// DOPPLER also divides the filter output by the filter's step response
// c_t = b0 + b1 * [t >= 1] - a1 * c_{t-1} - a2 * c_{t-2}, from zero, as its
// authors do: y_t / c_t undoes the shrinkage of the first outputs from the
// zero initial state (c_0 = b0 = 0.125 at the defaults, c_t > 0.99 from
// t = 9 on, c_t -> the DC gain, 1). c_t is the same for every coordinate:
// a scalar, which the host block advances once per step in float64. The
// noise in y_t / c_t after the noise of steps 0..t has the variance
// attenuation_t(y) * sigma_w2 / c_t**2 exactly (y_t / c_t = g_t at t = 0),
// which the correction subtracts.

optimizer doppler

hyper lr = 1e-3 in [0, inf)
hyper beta1 = 0.9 in [0, 1) alias betas[0]   // 1 open: 1 - beta1 ** (t + 1) divides m
hyper beta2 = 0.999 in [0, 1) alias betas[1] // 1 open: 1 - beta2 ** (t + 1) divides v
hyper eps = 1e-8 in (0, inf)                 // 0 open: sqrt(v) + eps divides, and v can be 0
hyper wd = 0 in [0, inf) alias weight_decay  // decoupled weight decay (lambda)
hyper b0 = 0.125                             // weight of g_t
hyper b1 = 0.125                             // weight of g_{t-1}
hyper a1 = -1 in (-2, 2)                     // feedback of y_{t-1} (with a minus sign); open: a pole on the unit circle
hyper a2 = 0.25 in (-1, 1)                   // feedback of y_{t-2} (with a minus sign); open: a pole on the unit circle
hyper eps_v = 1e-8 in [0, inf)               // floor of the corrected second moment

scalar c = 0   // the step response c_t (c_{t-1} before the host block)
scalar c1 = 0  // c_{t-1}

state y = 0    // the filtered gradient y_t, before the division by c_t
state y1 = 0   // y_{t-1}
state g1 = 0   // g_{t-1}
state m = 0
state v = 0

step {
	host {
		cprev = c
		c = b0 + b1 * min(t, 1) - a1 * c - a2 * c1
		c1 = cprev
	}
	yprev = y
	y = b0 * g + b1 * g1 - a1 * y - a2 * y1
	y1 = yprev
	g1 = g
	yhat = y / c
	m = beta1 * m + (1 - beta1) * yhat
	v = beta2 * v + (1 - beta2) * (yhat * yhat)
	mhat = m / (1 - beta1 ** (t + 1))
	vhat = v / (1 - beta2 ** (t + 1))
	vbar = max(vhat - attenuation_t(y) * sigma_w2 / (c * c), eps_v)
	theta = (1 - lr * wd) * theta - lr * mhat / (sqrt(vbar) + eps)
}

diagnostic clamp_mass(mhat, vbar)  // the share of the update on the floor eps_v (docs/dsl.md)
