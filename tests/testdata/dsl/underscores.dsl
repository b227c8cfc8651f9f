// Hypers with underscores in every position, a hyper-dependent initial
// value, and a hyper that only the initial value reads.

optimizer under_scores

hyper learning_rate_ = 1e-3 in (0, inf)
hyper beta_1 = 0.9 in [0, 1)
hyper eps_v = 1e-8 in [0, inf)
hyper init_scale = 0.25

state m_1 = init_scale * beta_1
state m_2 = 0

step {
	m_1 = beta_1 * m_1 + (1 - beta_1) * g
	m_2 = max(beta_1 * m_2, abs(g))
	theta = theta - learning_rate_ * m_1 / (m_2 + eps_v)
}
