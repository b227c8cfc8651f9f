// DP-SGD: a plain gradient step on the privatized gradient.
//
// Source: Abadi et al., "Deep Learning with Differential Privacy" (2016);
// the FiBeR paper's Algorithm 1 (Appendix C): theta_{t+1} = theta_t - lr * g_t,
// where g_t is the mean of per-example gradients clipped to norm C plus
// Gaussian noise of variance sigma_w2 per coordinate.

optimizer dp_sgd

hyper lr = 0.1 in [0, inf)

step {
	theta = theta - lr * g
}
